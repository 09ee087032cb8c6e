package lakeskip.jvm.sql;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import lakeskip.jvm.catalog.LakeTable;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.analysis.ResolvedTable;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.ShowCreateTable;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.V2CommandExec;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code SHOW CREATE TABLE} of a lakeskip table: Python's text ({@code show_create_table}),
 * which recreates the table through plain {@code spark.sql} (NOT NULL, the primary key as
 * Paimon's {@code primary-key} option, partitioning, options). Spark's own rendering would
 * print the {@code lakeskip.*} state properties {@code DESCRIBE TABLE EXTENDED} shows and no
 * key. Planned by {@code LakeDmlStrategy} (the same extension and run-time install); uses
 * Spark's internal {@code ShowCreateTable} / {@code ResolvedTable} plan nodes, as that does.
 */
public final class LakeShowCreate extends V2CommandExec {
  private final LakeTable table;
  private final scala.collection.immutable.Seq<Attribute> output;

  /** Public, with the product elements as arguments: Spark copies plan nodes reflectively. */
  public LakeShowCreate(LakeTable table, scala.collection.immutable.Seq<Attribute> output) {
    this.table = table;
    this.output = output;
  }

  /** The exec for {@code plan} when it is SHOW CREATE TABLE of a lakeskip table, else null. */
  public static SparkPlan plan(LogicalPlan plan) {
    if (!(plan instanceof ShowCreateTable)) {
      return null;
    }
    ShowCreateTable show = (ShowCreateTable) plan;
    if (!(show.child() instanceof ResolvedTable)) {
      return null;
    }
    Object t = ((ResolvedTable) show.child()).table();
    if (!(t instanceof LakeTable) || !((LakeTable) t).system.isEmpty()) {
      return null;
    }
    return new LakeShowCreate((LakeTable) t, show.output());
  }

  @Override
  public scala.collection.immutable.Seq<InternalRow> run() {
    ObjectNode p = table.ops.payload(table.ident);
    String sql = Bridge.ask(Op.SHOW_CREATE_TABLE, p, null).get(Key.SQL).asText();
    List<InternalRow> rows = new ArrayList<>();
    rows.add(new GenericInternalRow(new Object[] {UTF8String.fromString(sql)}));
    return scala.jdk.javaapi.CollectionConverters.asScala(rows).toList();
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
    return "LakeShowCreate " + table.name();
  }

  @Override
  public int productArity() {
    return 2;
  }

  @Override
  public Object productElement(int n) {
    return n == 0 ? table : output;
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof LakeShowCreate;
  }
}
