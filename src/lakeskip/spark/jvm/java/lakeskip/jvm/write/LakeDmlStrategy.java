package lakeskip.jvm.write;

import java.util.ArrayList;
import java.util.List;
import lakeskip.jvm.catalog.LakeTable;
import org.apache.spark.sql.catalyst.plans.logical.DeleteFromTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.MergeIntoTable;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.plans.logical.UpdateTable;
import org.apache.spark.sql.catalyst.trees.Origin;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.execution.datasources.v2.WriteToDataSourceV2;
import org.apache.spark.sql.execution.streaming.sources.MicroBatchWrite;

/**
 * {@code DELETE}, {@code UPDATE} and {@code MERGE INTO} on a lakeskip table from plain
 * {@code spark.sql}. Spark parses and analyses the statement (so the target resolves through
 * the catalog like any table, and unknown columns are Spark's own errors); lakeskip tables
 * offer no row-level write capability, so Spark would stop at planning ("not supported
 * temporarily"). This strategy runs first and plans a {@link LakeDmlExec} instead, which hands
 * Python the statement's own SQL text (the parser records it in every node's {@link Origin})
 * and the resolved target: Python runs the same function as {@code Session.sql}.
 *
 * <p>It also plans {@code SHOW CREATE TABLE} of a lakeskip table
 * ({@link lakeskip.jvm.sql.LakeShowCreate}), and a query answered from the manifests as rows on
 * the driver, with no Spark job ({@link lakeskip.jvm.read.aggregate.LakeAggregateExec}).
 *
 * <p>It also plans a scan that keeps every file and takes no runtime filter as Spark's V1 file
 * scan ({@link lakeskip.jvm.read.v1.LakeV1Scan}).
 *
 * <p>It also plans a streaming query's micro-batch into a lakeskip table ({@link
 * LakeStreamWriteExec}: Python's batch writer instead of Spark's data writers).
 *
 * <p>Installed as a session extension ({@code injectPlannerStrategy}) and, for a session
 * attached at run time, through {@code spark.experimental.extraStrategies}, which Spark reads
 * on every planning: both routes need no parser change.
 */
public final class LakeDmlStrategy extends SparkStrategy {
  @Override
  public scala.collection.immutable.Seq<SparkPlan> apply(LogicalPlan plan) {
    LogicalPlan target;
    String verb;
    if (plan instanceof DeleteFromTable) {
      target = ((DeleteFromTable) plan).table();
      verb = "DELETE";
    } else if (plan instanceof UpdateTable) {
      target = ((UpdateTable) plan).table();
      verb = "UPDATE";
    } else if (plan instanceof MergeIntoTable) {
      target = ((MergeIntoTable) plan).targetTable();
      verb = "MERGE";
    } else if (plan instanceof WriteToDataSourceV2) {
      return streamWrite((WriteToDataSourceV2) plan);
    } else if (plan instanceof OverwritePartitionsDynamic) {
      return dynamicOverwrite((OverwritePartitionsDynamic) plan);
    } else {
      SparkPlan show = lakeskip.jvm.sql.LakeShowCreate.plan(plan);
      if (show == null) {
        show = lakeskip.jvm.read.aggregate.LakeAggregateExec.plan(plan);
      }
      if (show == null) {
        show = lakeskip.jvm.read.v1.LakeV1Scan.plan(plan);
      }
      if (show == null) {
        return nil();
      }
      List<SparkPlan> out = new ArrayList<>();
      out.add(show);
      return scala.jdk.javaapi.CollectionConverters.asScala(out).toList();
    }
    LakeTable table = lakeTable(target);
    if (table == null) {
      return nil();
    }
    List<SparkPlan> out = new ArrayList<>();
    out.add(new LakeDmlExec(table, verb, statementText(plan.origin()), plan.output()));
    return scala.jdk.javaapi.CollectionConverters.asScala(out).toList();
  }

  /** A micro-batch of a streaming query into a lakeskip table ({@link LakeStreamWrite}). */
  private scala.collection.immutable.Seq<SparkPlan> streamWrite(WriteToDataSourceV2 w) {
    if (!(w.batchWrite() instanceof MicroBatchWrite)) {
      return nil();
    }
    Object support = ((MicroBatchWrite) w.batchWrite()).writeSupport();
    if (!(support instanceof LakeStreamWrite)) {
      return nil();
    }
    List<SparkPlan> out = new ArrayList<>();
    out.add(new LakeStreamWriteExec(planLater(w.query()), w.batchWrite(), (LakeStreamWrite) support));
    return scala.jdk.javaapi.CollectionConverters.asScala(out).toList();
  }

  /**
   * {@code INSERT OVERWRITE} with {@code partitionOverwriteMode=dynamic} (and
   * {@code overwritePartitions()}): the write is {@link LakeWriteBuilder}'s V1 write in
   * dynamic mode, which Spark's own strategy would hand to a V2 batch exec; Spark's V1 append
   * exec ({@code AppendDataExecV1}, internal) runs it instead: the query's Dataset goes to
   * Python, which replaces only the partitions the rows land in.
   */
  private static scala.collection.immutable.Seq<SparkPlan> dynamicOverwrite(
      OverwritePartitionsDynamic o) {
    LakeTable table = o.table() instanceof DataSourceV2Relation
        && ((DataSourceV2Relation) o.table()).table() instanceof LakeTable
        ? (LakeTable) ((DataSourceV2Relation) o.table()).table() : null;
    if (table == null || o.write().isEmpty()
        || !(o.write().get() instanceof org.apache.spark.sql.connector.write.V1Write)) {
      return nil();
    }
    final DataSourceV2Relation relation = (DataSourceV2Relation) o.table();
    scala.Function0<scala.runtime.BoxedUnit> refresh =
        new scala.runtime.AbstractFunction0<scala.runtime.BoxedUnit>() {
          @Override
          public scala.runtime.BoxedUnit apply() {
            org.apache.spark.sql.classic.SparkSession s =
                (org.apache.spark.sql.classic.SparkSession)
                    org.apache.spark.sql.SparkSession.active();
            s.sharedState().cacheManager().recacheByPlan(s, relation);
            return scala.runtime.BoxedUnit.UNIT;
          }
        };
    List<SparkPlan> out = new ArrayList<>();
    out.add(new org.apache.spark.sql.execution.datasources.v2.AppendDataExecV1(
        table, o.query(), refresh,
        (org.apache.spark.sql.connector.write.V1Write) o.write().get()));
    return scala.jdk.javaapi.CollectionConverters.asScala(out).toList();
  }

  /**
   * Adds the strategy to a running session's {@code experimental.extraStrategies} (once): the
   * route for {@code lakeskip.connect(wh, spark=existing)}, where no extension is configured.
   */
  public static void install(org.apache.spark.sql.SparkSession session) {
    org.apache.spark.sql.ExperimentalMethods exp = session.experimental();
    List<SparkStrategy> all = new ArrayList<>();
    scala.collection.Iterator<SparkStrategy> it = exp.extraStrategies().iterator();
    while (it.hasNext()) {
      SparkStrategy s = it.next();
      if (s instanceof LakeDmlStrategy) {
        return;
      }
      all.add(s);
    }
    all.add(new LakeDmlStrategy());
    exp.extraStrategies_$eq(scala.jdk.javaapi.CollectionConverters.asScala(all).toList());
  }

  private static scala.collection.immutable.Seq<SparkPlan> nil() {
    return scala.jdk.javaapi.CollectionConverters.asScala(new ArrayList<SparkPlan>()).toList();
  }

  /** The lakeskip table a DML target resolves to, or null (another source: Spark decides). */
  static LakeTable lakeTable(LogicalPlan target) {
    LogicalPlan p = target;
    while (true) {
      if (p instanceof DataSourceV2Relation) {
        Object t = ((DataSourceV2Relation) p).table();
        return t instanceof LakeTable ? (LakeTable) t : null;
      }
      if (p instanceof DataSourceV2ScanRelation) {
        Object t = ((DataSourceV2ScanRelation) p).relation().table();
        return t instanceof LakeTable ? (LakeTable) t : null;
      }
      // an alias (MERGE INTO t AS x) or a projection Spark put over the relation
      if (p.children().size() != 1) {
        return null;
      }
      p = p.children().head();
    }
  }

  /** The whole statement as the user wrote it (null: Spark did not record it). */
  static String statementText(Origin origin) {
    if (origin.sqlText().isEmpty()) {
      return null;
    }
    String text = origin.sqlText().get();
    if (origin.startIndex().isDefined() && origin.stopIndex().isDefined()) {
      int start = (Integer) origin.startIndex().get();
      int stop = (Integer) origin.stopIndex().get();
      if (start >= 0 && stop < text.length() && start <= stop) {
        return text.substring(start, stop + 1);
      }
    }
    return text;
  }
}
