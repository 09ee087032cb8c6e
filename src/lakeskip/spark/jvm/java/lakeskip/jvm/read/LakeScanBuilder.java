package lakeskip.jvm.read;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.AggregateKind;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import lakeskip.jvm.cache.ScanCache;
import lakeskip.jvm.cache.SessionKey;
import lakeskip.jvm.catalog.LakeTable;
import lakeskip.jvm.read.pk.LakeDvScan;
import lakeskip.jvm.read.pk.LakePkScan;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.UnaryExpression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.internal.connector.SupportsPushDownCatalystFilters;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Receives Spark's filters and required columns, asks Python which files to read, and builds
 * Spark's own ParquetScan over exactly those files with the same filters and columns pushed
 * (so EXPLAIN, row-group pruning and column pruning are those of plain Parquet). A query
 * that asks exactly what an earlier one asked of the same snapshot reuses its scan
 * ({@link ScanCache}).
 *
 * <p>Internal Spark API, because the public one cannot do the job:
 * {@code SupportsPushDownCatalystFilters} hands us the Catalyst filters that
 * {@code ParquetScanBuilder.pushFilters} (also internal) needs unchanged; the public V2 path
 * would force a lossy V2 -> V1 round trip ({@code PredicateUtils.toV1} drops OR branches).
 * Every filter stays a post-scan filter: file pruning never replaces Spark's own filtering.
 */
public final class LakeScanBuilder
    implements SupportsPushDownCatalystFilters, SupportsPushDownRequiredColumns,
        SupportsPushDownAggregates {
  /** Spark conf: answer count / min / max from the manifests where exact (default true). */
  static final String AGGREGATE_PUSHDOWN = "spark.lakeskip.aggregate-pushdown.enabled";

  private final LakeTable table;
  private final CaseInsensitiveStringMap options;
  private scala.collection.immutable.Seq<Expression> filters =
      scala.jdk.javaapi.CollectionConverters.asScala(new java.util.ArrayList<Expression>()).toList();
  private StructType required;
  /** The pushed aggregate's answer ({@link #pushAggregation}); null: rows are read. */
  private LakeAggregateScan aggregate;

  public LakeScanBuilder(LakeTable table, CaseInsensitiveStringMap options) {
    this.table = table;
    this.options = options;
  }

  @Override
  public scala.collection.immutable.Seq<Expression> pushFilters(
      scala.collection.immutable.Seq<Expression> filters) {
    if (table.audit()) {
      // filters on t$audit_log's rowkind stay Spark's alone (no file holds that column)
      java.util.List<Expression> kept = new java.util.ArrayList<>();
      for (Expression e : scala.jdk.javaapi.CollectionConverters.asJava(filters)) {
        boolean onRowkind = false;
        for (org.apache.spark.sql.catalyst.expressions.Attribute a :
            scala.jdk.javaapi.CollectionConverters.asJava(e.references().toSeq())) {
          onRowkind |= a.name().equals(LakeAuditScan.ROWKIND);
        }
        if (!onRowkind) {
          kept.add(e);
        }
      }
      this.filters = scala.jdk.javaapi.CollectionConverters.asScala(kept).toList();
      return filters;
    }
    this.filters = filters;
    if (!table.trimmedKeys.isEmpty()) {
      return filters;  // merge-on-read (LakePkScan): every filter stays after the merge
    }
    // as Spark's own file sources: a filter on partition columns only is answered exactly by
    // the file index (LakeFileIndex: Spark evaluates it on each partition's values, which
    // are also the values the rows get), so it is no post-scan filter; this is also what
    // lets Spark push an aggregate (it pushes none above a post-scan filter)
    java.util.Set<String> partitions = new java.util.HashSet<>(table.partitionKeys);
    java.util.List<Expression> post = new java.util.ArrayList<>();
    for (Expression e : scala.jdk.javaapi.CollectionConverters.asJava(filters)) {
      if (!partitionOnly(e, partitions)) {
        post.add(e);
      }
    }
    return scala.jdk.javaapi.CollectionConverters.asScala(post).toList();
  }

  /**
   * Whether the file index answers {@code e} exactly: deterministic, no subquery, and every
   * column it reads a partition column (a subset of what Spark's {@code FileScanBuilder} takes
   * as partition filters, so Spark's Parquet scan prunes partitions by it).
   */
  static boolean partitionOnly(Expression e, java.util.Set<String> partitions) {
    if (partitions.isEmpty() || !e.deterministic()
        || org.apache.spark.sql.catalyst.expressions.SubqueryExpression$.MODULE$.hasSubquery(e)) {
      return false;
    }
    java.util.List<Attribute> refs =
        scala.jdk.javaapi.CollectionConverters.asJava(e.references().toSeq());
    if (refs.isEmpty()) {
      return false;
    }
    for (Attribute a : refs) {
      if (!partitions.contains(a.name())) {
        return false;
      }
    }
    return true;
  }

  @Override
  public Predicate[] pushedFilters() {
    return new Predicate[0];
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    this.required = table.audit() ? LakeAuditScan.withoutRowkind(requiredSchema) : requiredSchema;
  }

  /**
   * {@code count(*)}, {@code count(c)}, {@code min(c)}, {@code max(c)} without GROUP BY,
   * answered from the manifests by Python ({@code aggregate_scan}; lakeskip.planner.aggregate
   * says when that is exact and refuses otherwise: then false, and Spark reads the rows).
   * Only partition filters can be here (Spark pushes no aggregate above a post-scan filter);
   * the partitions they keep are decided by Spark's own file index, as for a scan. The
   * answer is partial (one row per partition): Spark's final aggregate combines the rows.
   */
  @Override
  public boolean pushAggregation(Aggregation aggregation) {
    aggregate = null;
    SparkSession session = SparkSession.active();
    if (!Boolean.parseBoolean(session.conf().get(AGGREGATE_PUSHDOWN, "true").trim())
        || table.audit() || !table.system.isEmpty() || !table.trimmedKeys.isEmpty()
        || aggregation.groupByExpressions().length > 0) {
      return false;
    }
    java.util.Set<String> partitions = new java.util.HashSet<>(table.partitionKeys);
    for (Expression e : scala.jdk.javaapi.CollectionConverters.asJava(filters)) {
      if (!partitionOnly(e, partitions)) {
        return false;
      }
    }
    ObjectNode p = table.ops.payload(table.ident);
    if (table.snapshotId != null) {
      p.put(Key.SNAPSHOT_ID, table.snapshotId);
    }
    p.set(Key.FILTERS, PredicateJson.catalyst(filters));
    p.set(Key.SESSION, session());
    com.fasterxml.jackson.databind.node.ArrayNode calls = p.putArray(Key.AGGREGATES);
    StructType out = new StructType();
    java.util.List<String> described = new java.util.ArrayList<>();
    java.util.List<Boolean> counts = new java.util.ArrayList<>();
    for (AggregateFunc f : aggregation.aggregateExpressions()) {
      ObjectNode call = calls.addObject();
      DataType type = DataTypes.LongType;
      counts.add(f instanceof CountStar || f instanceof Count);
      if (f instanceof CountStar) {
        call.put(Key.FUNCTION, AggregateKind.COUNT_STAR);
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
          return false;
        }
        if (!(arg instanceof NamedReference) || ((NamedReference) arg).fieldNames().length != 1) {
          return false;
        }
        String column = ((NamedReference) arg).fieldNames()[0];
        if (!java.util.Arrays.asList(table.schema.fieldNames()).contains(column)) {
          return false;
        }
        call.put(Key.FUNCTION, function);
        call.put(Key.COLUMN, column);
        if (!function.equals(AggregateKind.COUNT)) {
          type = table.schema.apply(column).dataType();
        }
      }
      out = out.add("__lakeskip_agg" + described.size(), type, true);
      described.add(f.describe());
    }
    JsonNode reply = Bridge.ask(Op.AGGREGATE_SCAN, p, null);
    if (reply.has(Key.REFUSED)) {
      return false;
    }
    java.util.Set<String> kept = null;  // names of the partitions' sample files; null: all
    if (!filters.isEmpty()) {
      com.fasterxml.jackson.databind.node.ArrayNode files = p.arrayNode();
      for (JsonNode part : reply.path(Key.PARTITIONS)) {
        ObjectNode f = files.addObject();
        f.set(Key.PATH, part.get(Key.PATH));
        f.set(Key.SIZE, part.get(Key.SIZE));
        f.put(Key.MTIME, 0);
        f.set(Key.PARTITION, part.get(Key.PARTITION));
      }
      kept = new java.util.HashSet<>();
      LakeFileIndex index = LakeFileIndex.of(session, table.partitionSchema(), files);
      scala.collection.immutable.Seq<Expression> none =
          scala.jdk.javaapi.CollectionConverters.asScala(new java.util.ArrayList<Expression>())
              .toList();
      for (PartitionDirectory dir :
          scala.jdk.javaapi.CollectionConverters.asJava(index.listFiles(filters, none))) {
        for (FileStatusWithMetadata f : scala.jdk.javaapi.CollectionConverters.asJava(dir.files())) {
          kept.add(f.getPath().getName());
        }
      }
    }
    java.util.List<Object[]> rows = new java.util.ArrayList<>();
    int files = 0;
    for (JsonNode part : reply.path(Key.PARTITIONS)) {
      String path = part.get(Key.PATH).asText();
      if (kept != null && !kept.contains(path.substring(path.lastIndexOf('/') + 1))) {
        continue;
      }
      files += part.path(Key.FILES).asInt(0);
      Object[] row = new Object[out.fields().length];
      for (int i = 0; i < row.length; i++) {
        row[i] = LakeFileIndex.value(out.fields()[i].dataType(), part.path(Key.VALUES).get(i));
      }
      rows.add(row);
    }
    if (rows.isEmpty()) {  // no file: counts 0, min/max NULL (a final SUM of no row is NULL)
      Object[] row = new Object[out.fields().length];
      for (int i = 0; i < row.length; i++) {
        row[i] = counts.get(i) ? (Object) 0L : null;
      }
      rows.add(row);
    }
    aggregate = new LakeAggregateScan(out, rows,
        "LakeAggregateScan " + table.name() + " PushedAggregation: [" + String.join(", ", described)
            + "], PushedGroupBy: [], PushedFilters: " + filters.mkString("[", ", ", "]")
            + ", answered from the manifests of " + files + " file(s), no data file read");
    return true;
  }

  @Override
  public Scan build() {
    if (aggregate != null) {
      return aggregate;
    }
    SparkSession session = SparkSession.active();
    SessionKey key = null;
    if (!table.token.isEmpty()) {
      // everything the plan_scan payload below is made of, without making it
      key = ScanCache.key(session, table.token, table.name() + "@" + table.snapshotId,
          filters, required, options);
      ScanCache.Entry hit = ScanCache.get(key);
      if (hit != null && reported(hit.reportId)) {
        return hit.scan instanceof LakeScan ? ((LakeScan) hit.scan).reused() : hit.scan;
      }
    }
    ObjectNode p = table.ops.payload(table.ident);
    if (table.snapshotId != null) {
      p.put(Key.SNAPSHOT_ID, table.snapshotId);
    }
    p.set(Key.FILTERS, PredicateJson.catalyst(filters));
    // the columns Spark may push filters on: Python checks only these for unpushable ones
    java.util.TreeSet<String> columns = new java.util.TreeSet<>();
    for (Expression e : scala.jdk.javaapi.CollectionConverters.asJava(filters)) {
      for (Attribute a : scala.jdk.javaapi.CollectionConverters.asJava(e.references().toSeq())) {
        columns.add(a.name());
      }
    }
    com.fasterxml.jackson.databind.node.ArrayNode names = p.putArray(Key.FILTER_COLUMNS);
    columns.forEach(names::add);
    p.set(Key.SESSION, session());
    JsonNode reply = Bridge.ask(Op.PLAN_SCAN, p, null);
    Scan scan = scan(session, reply);
    if (scan instanceof LakeScan) {
      ((LakeScan) scan).withRuntimeFilter(new LakeRuntimeFilter(p, reply));
    }
    if (key != null && table.token.equals(reply.path(Key.TOKEN).asText(null))) {
      ScanCache.put(key, scan, reply.path(Key.REPORT_ID).asText(""));
    }
    return scan;
  }

  /**
   * Whether the reused scan's pruning report reached this query: nothing to do for an
   * untagged query (nobody collects its report); a tagged one asks Python to file the stored
   * report under its tag, false if Python has let it go (then the query is planned afresh).
   */
  private static boolean reported(String reportId) {
    if (Bridge.tag().isEmpty()) {
      return true;
    }
    ObjectNode p = Bridge.obj();
    p.put(Key.REPORT_ID, reportId);
    return Bridge.ask(Op.FILE_REPORT, p, null).path(Key.FOUND).asBoolean(false);
  }

  /** Spark's scan of the files Python kept (with their DVs; merged by key for a PK table). */
  private Scan scan(SparkSession session, JsonNode reply) {
    LakePruning pruning = LakePruning.of(reply.get(Key.PRUNING));
    boolean audit = table.audit();
    if (!table.trimmedKeys.isEmpty()) {
      Scan pk = LakePkScan.create(table, reply, required, options, filters, audit);
      return new LakeScan(audit ? new LakeAuditScan(pk) : pk, table.name(), pruning);
    }
    LakeFileIndex index = LakeFileIndex.of(session, table.partitionSchema(), reply.path(Key.FILES));
    Map<String, byte[]> vectors = new HashMap<>();
    for (JsonNode f : reply.path(Key.FILES)) {
      if (f.hasNonNull(Key.DV)) {
        String path = f.get(Key.PATH).asText();
        vectors.put(path.substring(path.lastIndexOf('/') + 1),
            Base64.getDecoder().decode(f.get(Key.DV).asText()));
      }
    }
    StructType schema = table.schema;
    StructType dataSchema = table.dataSchema();
    StructType want = required;
    if (audit && table.primaryKey()) {
      // t$audit_log of a table read without a merge: each version's kind from its file
      StructField kind =
          new StructField(LakePkScan.KIND, DataTypes.ByteType, true, Metadata.empty());
      schema = schema.add(kind);
      dataSchema = dataSchema.add(kind);
      want = (want != null ? want : table.schema).add(kind);
    }
    if (!vectors.isEmpty()) {
      // Spark's Parquet reader fills this column with each row's position in its file
      StructField rowIndex = new StructField(LakeDvScan.ROW_INDEX, DataTypes.LongType, true,
          Metadata.empty());
      schema = schema.add(rowIndex);
      dataSchema = dataSchema.add(rowIndex);
      want = (want != null ? want : table.schema).add(rowIndex);
    }
    ParquetScanBuilder parquet =
        new ParquetScanBuilder(session, index, schema, dataSchema, options);
    parquet.pushFilters(pushable(filters, reply, new java.util.HashSet<>(table.partitionKeys)));
    if (want != null) {
      parquet.pruneColumns(want);
    }
    Scan scan = parquet.build();
    scan = vectors.isEmpty() ? scan : new LakeDvScan(scan, vectors);
    return new LakeScan(audit ? new LakeAuditScan(scan) : scan, table.name(), pruning);
  }

  /**
   * The filters Spark's Parquet scan may use to skip row groups and pages: all but those on a
   * column Python named {@code unpushable} (a FLOAT/DOUBLE column that may hold NaN in a file
   * whose Parquet min/max leave NaN out, issue 26; Spark orders NaN above +Infinity, so
   * {@code c = NaN} or {@code c > x} would skip its NaN rows). {@code IS [NOT] NULL} only
   * reads null counts and stays. Every filter is still applied to the rows by Spark.
   */
  public static scala.collection.immutable.Seq<Expression> pushable(
      scala.collection.immutable.Seq<Expression> filters, JsonNode reply) {
    return pushable(filters, reply, java.util.Collections.emptySet());
  }

  /**
   * As {@link #pushable(scala.collection.immutable.Seq, JsonNode)}, but a filter on the
   * {@code partitions} columns only is always kept: Spark evaluates it on the partition
   * values (no statistics), and it may be no post-scan filter ({@link #pushFilters}).
   */
  public static scala.collection.immutable.Seq<Expression> pushable(
      scala.collection.immutable.Seq<Expression> filters, JsonNode reply,
      java.util.Set<String> partitions) {
    java.util.Set<String> unsafe = new java.util.HashSet<>();
    for (JsonNode n : reply.path(Key.UNPUSHABLE)) {
      unsafe.add(n.asText().toLowerCase(java.util.Locale.ROOT));
    }
    if (unsafe.isEmpty()) {
      return filters;
    }
    java.util.List<Expression> out = new java.util.ArrayList<>();
    for (Expression e : scala.jdk.javaapi.CollectionConverters.asJava(filters)) {
      boolean nullTest = (e instanceof IsNull || e instanceof IsNotNull)
          && ((UnaryExpression) e).child() instanceof Attribute;
      boolean touches = false;
      for (Attribute a :
          scala.jdk.javaapi.CollectionConverters.asJava(e.references().toSeq())) {
        touches |= unsafe.contains(a.name().toLowerCase(java.util.Locale.ROOT));
      }
      if (nullTest || !touches || partitionOnly(e, partitions)) {
        out.add(e);
      }
    }
    return scala.jdk.javaapi.CollectionConverters.asScala(out).toList();
  }

  /**
   * The querying session's time zone and {@code spark.paimon.*} settings (time travel), sent
   * with the callback: Python reading them back with {@code spark.conf.get} cost one more
   * round trip into the JVM per key and query.
   */
  public static ObjectNode session() {
    SQLConf conf = SQLConf.get();
    ObjectNode n = Bridge.obj();
    n.put(Key.TIME_ZONE, conf.sessionLocalTimeZone());
    ObjectNode settings = n.putObject(Key.SETTINGS);
    scala.collection.Iterator<scala.Tuple2<String, String>> it = conf.getAllConfs().iterator();
    while (it.hasNext()) {
      scala.Tuple2<String, String> kv = it.next();
      if (kv._1().startsWith("spark.paimon.")) {
        settings.put(kv._1(), kv._2());
      }
    }
    return n;
  }
}
