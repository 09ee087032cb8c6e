package lakeskip.jvm.write;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import lakeskip.jvm.catalog.LakeTable;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.V2CommandExec;

/**
 * Runs one DELETE / UPDATE / MERGE INTO on a lakeskip table: a single callback with the
 * statement text, the resolved target and the session's current catalog and namespace; Python
 * (the same code as {@code Session.sql}) parses the text, runs the copy-on-write job and commits.
 * Returns no rows (the logical command's output, as for any V2 DML in Spark).
 */
public final class LakeDmlExec extends V2CommandExec {
  private final LakeTable table;
  private final String verb;
  private final String sql;
  private final scala.collection.immutable.Seq<Attribute> output;

  /** Public, with the product elements as arguments: Spark copies plan nodes reflectively. */
  public LakeDmlExec(
      LakeTable table, String verb, String sql, scala.collection.immutable.Seq<Attribute> output) {
    this.table = table;
    this.verb = verb;
    this.sql = sql;
    this.output = output;
  }

  @Override
  public scala.collection.immutable.Seq<InternalRow> run() {
    if (sql == null) {
      throw Bridge.error(
          verb + " on " + table.name() + ": Spark did not record the statement text", null);
    }
    if (table.pinned) {
      throw Bridge.error(
          verb + " on " + table.name() + " at an older snapshot (time travel) is not possible",
          null);
    }
    ObjectNode p = table.ops.payload(table.ident);
    p.put(Key.VERB, verb);
    p.put(Key.SQL, sql);
    SparkSession s = SparkSession.active();
    p.put(Key.CURRENT_CATALOG, s.sessionState().catalogManager().currentCatalog().name());
    com.fasterxml.jackson.databind.node.ArrayNode ns = p.putArray(Key.CURRENT_NAMESPACE);
    for (String n : s.sessionState().catalogManager().currentNamespace()) {
      ns.add(n);
    }
    Bridge.ask(Op.DML, p, s); // the statement runs in its own session
    return scala.jdk.javaapi.CollectionConverters.asScala(new ArrayList<InternalRow>()).toList();
  }

  @Override
  public scala.collection.immutable.Seq<Attribute> output() {
    return output;
  }

  @Override
  public scala.collection.immutable.Seq<SparkPlan> children() {
    return scala.jdk.javaapi.CollectionConverters.asScala(new ArrayList<SparkPlan>()).toList();
  }

  @Override
  public SparkPlan withNewChildrenInternal(scala.collection.immutable.IndexedSeq<SparkPlan> c) {
    return this;
  }

  @Override
  public String simpleString(int maxFields) {
    return "LakeDml " + verb + " " + table.name();
  }

  @Override
  public int productArity() {
    return 4;
  }

  @Override
  public Object productElement(int n) {
    switch (n) {
      case 0:
        return table;
      case 1:
        return verb;
      case 2:
        return sql;
      case 3:
        return output;
      default:
        throw new IndexOutOfBoundsException(String.valueOf(n));
    }
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof LakeDmlExec;
  }
}
