package lakeskip.jvm.sql;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.UUID;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import lakeskip.jvm.catalog.LakeOps;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.CommandExecutionMode;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code EXPLAIN PRUNING <query>} in plain Spark SQL ({@link LakeParser} turns it into
 * {@code CALL <catalog>.sys.explain_pruning(query => '...')}, also callable as written): plans
 * the query in the calling session, as it would run, without running it, and returns the
 * pruning report of every lakeskip table it scans, as {@code Session.sql}'s EXPLAIN PRUNING
 * does: (table, metric, value) rows.
 */
public final class LakeExplain implements UnboundProcedure, BoundProcedure {
  public static final String NAME = "sys.explain_pruning";
  private static final StructType SCHEMA =
      new StructType()
          .add("table", DataTypes.StringType)
          .add("metric", DataTypes.StringType)
          .add("value", DataTypes.StringType);
  private final LakeOps ops;

  public LakeExplain(LakeOps ops) {
    this.ops = ops;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public String description() {
    return "files kept and skipped (by partition, bucket, stats, each index) per lakeskip table"
        + " a query reads, without running it";
  }

  @Override
  public BoundProcedure bind(StructType inputType) {
    return this;
  }

  @Override
  public ProcedureParameter[] parameters() {
    return new ProcedureParameter[] {ProcedureParameter.in("query", DataTypes.StringType).build()};
  }

  @Override
  public boolean isDeterministic() {
    return false;
  }

  @Override
  public Iterator<Scan> call(InternalRow input) {
    if (input.isNullAt(0)) {
      throw Bridge.error("EXPLAIN PRUNING needs a query", null);
    }
    String query = input.getUTF8String(0).toString();
    SparkSession session = SparkSession.active();
    org.apache.spark.sql.classic.SparkSession classic =
        (org.apache.spark.sql.classic.SparkSession) session;
    LogicalPlan plan;
    try {
      plan = classic.sessionState().sqlParser().parsePlan(query);
    } catch (org.apache.spark.sql.catalyst.parser.ParseException e) {
      throw Bridge.error("EXPLAIN PRUNING: " + Bridge.firstLine(e.getMessage()), null);
    }
    if (plan instanceof Command) {
      throw Bridge.error("EXPLAIN PRUNING takes a query (SELECT ...), not "
          + plan.nodeName(), null);
    }
    // the query's scans file their reports under a tag of their own, on this thread
    SparkContext sc = session.sparkContext();
    String previous = sc.getLocalProperty(Bridge.TAG_PROPERTY);
    String tag = "explain-" + UUID.randomUUID();
    sc.setLocalProperty(Bridge.TAG_PROPERTY, tag);
    try {
      classic.sessionState().executePlan(plan, CommandExecutionMode.SKIP()).optimizedPlan();
    } finally {
      sc.setLocalProperty(Bridge.TAG_PROPERTY, previous);
    }
    ObjectNode p = ops.payload();
    p.put(Key.QUERY_TAG, tag);
    JsonNode r = ops.call(Op.EXPLAIN_ROWS, p);
    List<InternalRow> rows = new ArrayList<>();
    for (JsonNode row : r.path(Key.ROWS)) {
      Object[] values = new Object[3];
      for (int i = 0; i < 3; i++) {
        values[i] = UTF8String.fromString(row.path(i).asText(""));
      }
      rows.add(new GenericInternalRow(values));
    }
    return LakeProcedure.localScan(SCHEMA, rows);
  }
}
