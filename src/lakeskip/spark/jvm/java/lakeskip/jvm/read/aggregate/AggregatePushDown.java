package lakeskip.jvm.read.aggregate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.AggregateKind;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import lakeskip.jvm.catalog.LakeTable;
import lakeskip.jvm.read.FilterPushDown;
import lakeskip.jvm.read.LakeFileIndex;
import lakeskip.jvm.read.ScanFiles;
import lakeskip.jvm.read.ScanRequest;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code count(*)}, {@code count(c)}, {@code min(c)}, {@code max(c)}, without GROUP BY or
 * grouped by partition columns,
 * answered from the manifests by Python ({@code aggregate_scan}; lakeskip.planner.aggregate
 * says when that is exact and refuses otherwise: then no scan, and Spark reads the rows).
 * Only partition filters can be here (Spark pushes no aggregate above a post-scan filter);
 * the partitions they keep are decided by Spark's own file index, as for a scan. Python
 * answers one partial row per partition; the kept partitions' rows are combined here into the
 * final rows, one per group (the push-down is complete: {@code LakeScanBuilder.supportCompletePushDown}),
 * which {@link LakeAggregateExec} returns on the driver: no Spark job.
 */
public final class AggregatePushDown {
  /** Spark conf: answer count / min / max from the manifests where exact (default true). */
  public static final String ENABLED = "spark.lakeskip.aggregate-pushdown.enabled";

  private AggregatePushDown() {}

  /** The scan answering {@code aggregation} from the manifests, or null: read the rows. */
  public static Scan push(
      LakeTable table, scala.collection.immutable.Seq<Expression> filters,
      Aggregation aggregation) {
    SparkSession session = SparkSession.active();
    if (!Boolean.parseBoolean(session.conf().get(ENABLED, "true").trim())
        || table.audit() || !table.system.isEmpty() || table.readByMerge()
        || !FilterPushDown.allPartitionOnly(table, filters)) {
      return null;
    }
    int[] groups = groupColumns(table, aggregation);
    if (groups == null) {
      return null;
    }
    ObjectNode p = ScanRequest.payload(table, filters);
    ArrayNode calls = p.putArray(Key.AGGREGATES);
    StructType out = new StructType();
    for (int g : groups) {  // Spark reads the group-by columns first, then the aggregates
      out = out.add(table.partitionSchema().fields()[g]);
    }
    List<String> described = new ArrayList<>();
    List<String> functions = new ArrayList<>();
    for (AggregateFunc f : aggregation.aggregateExpressions()) {
      ObjectNode call = calls.addObject();
      DataType type = DataTypes.LongType;
      if (f instanceof CountStar) {
        call.put(Key.FUNCTION, AggregateKind.COUNT_STAR);
        functions.add(AggregateKind.COUNT_STAR);
      } else {
        String function;
        org.apache.spark.sql.connector.expressions.Expression arg;
        if (f instanceof Count && !((Count) f).isDistinct()) {
          function = AggregateKind.COUNT;
          arg = ((Count) f).column();
        } else if (f instanceof Min) {
          function = AggregateKind.MIN;
          arg = ((Min) f).column();
        } else if (f instanceof Max) {
          function = AggregateKind.MAX;
          arg = ((Max) f).column();
        } else {
          return null;
        }
        if (!(arg instanceof NamedReference) || ((NamedReference) arg).fieldNames().length != 1) {
          return null;
        }
        String column = ((NamedReference) arg).fieldNames()[0];
        if (!Arrays.asList(table.schema.fieldNames()).contains(column)) {
          return null;
        }
        call.put(Key.FUNCTION, function);
        call.put(Key.COLUMN, column);
        functions.add(function);
        if (!function.equals(AggregateKind.COUNT)) {
          type = table.schema.apply(column).dataType();
        }
      }
      out = out.add("__lakeskip_agg" + described.size(), type, true);
      described.add(f.describe());
    }
    JsonNode reply = Bridge.ask(Op.AGGREGATE_SCAN, p, null);
    if (reply.has(Key.REFUSED)) {
      return null;
    }
    Set<String> kept = filters.isEmpty() ? null : keptFiles(session, table, filters, reply);
    // one row per group (the kept partitions' rows combined); none grouped: one row
    java.util.Map<String, Object[]> byGroup = new java.util.LinkedHashMap<>();
    int files = 0;
    int width = functions.size();
    for (JsonNode part : reply.path(Key.PARTITIONS)) {
      String path = part.get(Key.PATH).asText();
      if (kept != null && !kept.contains(path.substring(path.lastIndexOf('/') + 1))) {
        continue;
      }
      files += part.path(Key.FILES).asInt(0);
      Object[] values = new Object[groups.length + width];
      StringBuilder key = new StringBuilder();
      for (int i = 0; i < groups.length; i++) {
        JsonNode v = part.path(Key.PARTITION).get(groups[i]);
        key.append(v).append('\u0000');
        values[i] = LakeFileIndex.value(out.fields()[i].dataType(), v);
      }
      for (int i = 0; i < width; i++) {
        values[groups.length + i] = LakeFileIndex.value(
            out.fields()[groups.length + i].dataType(), part.path(Key.VALUES).get(i));
      }
      Object[] before = byGroup.get(key.toString());
      byGroup.put(key.toString(),
          before == null ? values : combine(functions, groups.length, before, values));
    }
    List<Object[]> rows = new ArrayList<>(byGroup.values());
    if (rows.isEmpty() && groups.length == 0) {  // no file: counts 0, min/max NULL
      Object[] row = new Object[width];
      for (int i = 0; i < width; i++) {
        row[i] = functions.get(i).startsWith("count") ? (Object) 0L : null;
      }
      rows.add(row);
    }
    return new LakeAggregateScan(out, rows,
        "LakeAggregateScan " + table.name() + " PushedAggregation: [" + String.join(", ", described)
            + "], PushedGroupBy: " + java.util.Arrays.toString(aggregation.groupByExpressions())
            + ", PushedFilters: " + filters.mkString("[", ", ", "]")
            + ", answered from the manifests of " + files + " file(s), no data file read");
  }

  /**
   * The partition columns of a GROUP BY, as indexes into the partition schema (empty: no
   * GROUP BY), or null when it groups by anything else: each partition's row is then no
   * group's answer.
   */
  public static int[] groupColumns(LakeTable table, Aggregation aggregation) {
    org.apache.spark.sql.connector.expressions.Expression[] by = aggregation.groupByExpressions();
    int[] out = new int[by.length];
    for (int i = 0; i < by.length; i++) {
      if (!(by[i] instanceof NamedReference) || ((NamedReference) by[i]).fieldNames().length != 1) {
        return null;
      }
      out[i] = table.partitionKeys.indexOf(((NamedReference) by[i]).fieldNames()[0]);
      if (out[i] < 0) {
        return null;
      }
    }
    return out;
  }

  /**
   * Two partitions' rows of one group as one: the group's values (the first {@code groups}),
   * counts summed, the least min, the greatest max.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  private static Object[] combine(List<String> functions, int groups, Object[] a, Object[] b) {
    Object[] out = new Object[a.length];
    System.arraycopy(a, 0, out, 0, groups);
    for (int i = groups; i < a.length; i++) {
      String f = functions.get(i - groups);
      if (f.equals(AggregateKind.COUNT_STAR) || f.equals(AggregateKind.COUNT)) {
        out[i] = (Long) a[i] + (Long) b[i];
      } else if (a[i] == null || b[i] == null) {
        out[i] = a[i] == null ? b[i] : a[i];
      } else {  // Catalyst's internal forms: Long, Integer, Decimal, Boolean, ... all Comparable
        int c = ((Comparable) a[i]).compareTo(b[i]);
        out[i] = (f.equals(AggregateKind.MIN) ? c <= 0 : c >= 0) ? a[i] : b[i];
      }
    }
    return out;
  }

  /**
   * The names of the partitions' sample files Spark's own file index keeps under the
   * (partition) filters: the partitions whose rows the answer combines.
   */
  private static Set<String> keptFiles(
      SparkSession session, LakeTable table, scala.collection.immutable.Seq<Expression> filters,
      JsonNode reply) {
    List<String> paths = new ArrayList<>();
    List<JsonNode> values = new ArrayList<>();
    List<Long> sizes = new ArrayList<>();
    for (JsonNode part : reply.path(Key.PARTITIONS)) {
      paths.add(part.get(Key.PATH).asText());
      sizes.add(part.get(Key.SIZE).asLong());
      values.add(part.get(Key.PARTITION));
    }
    Set<String> kept = new HashSet<>();
    LakeFileIndex index = LakeFileIndex.of(session, table.partitionSchema(),
        ScanFiles.of(paths, sizes.stream().mapToLong(Long::longValue).toArray(), values));
    for (PartitionDirectory dir :
        CollectionConverters.asJava(index.listFiles(filters, FilterPushDown.none()))) {
      for (FileStatusWithMetadata f : CollectionConverters.asJava(dir.files())) {
        kept.add(f.getPath().getName());
      }
    }
    return kept;
  }
}
