package lakeskip.jvm.write;

import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.collection.immutable.Map;

/**
 * A DataFrame write with the option {@code mergeSchema} (Delta's and Iceberg's name) or
 * {@code write.merge-schema} (Paimon's) set to true asks for Spark's own schema evolution
 * of the write ({@code withSchemaEvolution}, what {@code INSERT WITH SCHEMA EVOLUTION} and
 * Scala's {@code writeTo(t).withSchemaEvolution()} set): Spark then adds the DataFrame's new
 * columns through the catalog's {@code alterTable} ({@code LakeTable} declares
 * {@code AUTOMATIC_SCHEMA_EVOLUTION} and accepts only added columns) before it resolves the
 * write against the new schema. A hint-resolution rule because that batch runs before
 * Spark's output resolution, which would refuse the extra columns; the target is not
 * resolved yet here, and a table that does not evolve automatically ignores the flag.
 */
public final class LakeMergeSchema extends Rule<LogicalPlan> {
  static final String[] OPTIONS = {"mergeSchema", "write.merge-schema"};

  static boolean asked(Map<String, String> options) {
    scala.collection.Iterator<scala.Tuple2<String, String>> it = options.iterator();
    while (it.hasNext()) {
      scala.Tuple2<String, String> e = it.next();
      for (String key : OPTIONS) {
        if (key.equalsIgnoreCase(e._1()) && "true".equalsIgnoreCase(e._2().trim())) {
          return true;
        }
      }
    }
    return false;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (plan instanceof AppendData) {
      AppendData a = (AppendData) plan;
      if (!a.withSchemaEvolution() && asked(a.writeOptions())) {
        return new AppendData(
            a.table(), a.query(), a.writeOptions(), a.isByName(), true, a.write(),
            a.analyzedQuery());
      }
    } else if (plan instanceof OverwriteByExpression) {
      OverwriteByExpression o = (OverwriteByExpression) plan;
      if (!o.withSchemaEvolution() && asked(o.writeOptions())) {
        return new OverwriteByExpression(
            o.table(), o.deleteExpr(), o.query(), o.writeOptions(), o.isByName(), true,
            o.write(), o.analyzedQuery());
      }
    } else if (plan instanceof OverwritePartitionsDynamic) {
      OverwritePartitionsDynamic o = (OverwritePartitionsDynamic) plan;
      if (!o.withSchemaEvolution() && asked(o.writeOptions())) {
        return new OverwritePartitionsDynamic(
            o.table(), o.query(), o.writeOptions(), o.isByName(), true, o.write());
      }
    }
    return plan;
  }
}
