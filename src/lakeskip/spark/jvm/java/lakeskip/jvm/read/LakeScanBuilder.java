package lakeskip.jvm.read;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Arrays;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.cache.ScanCache;
import lakeskip.jvm.cache.SessionKey;
import lakeskip.jvm.catalog.LakeTable;
import lakeskip.jvm.read.aggregate.AggregatePushDown;
import lakeskip.jvm.read.pk.LakeDvScan;
import lakeskip.jvm.read.pk.LakePkScan;
import lakeskip.jvm.read.rules.LakeJoinKeys;
import lakeskip.jvm.read.rules.LakeTopN;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.NullOrdering;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownTopN;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder;
import org.apache.spark.sql.internal.connector.SupportsPushDownCatalystFilters;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Receives Spark's filters, required columns and aggregate, and assembles the scan: Spark's
 * own ParquetScan over exactly the files Python kept ({@link ScanRequest#plan}), with the same
 * filters and columns pushed (so EXPLAIN, row-group pruning and column pruning are those of
 * plain Parquet); merged by key for a primary-key table ({@link LakePkScan}), minus deleted
 * rows ({@link LakeDvScan}), with {@code rowkind} for {@code t$audit_log} ({@link
 * LakeAuditScan}). Which filter goes where is {@link FilterPushDown}'s, a pushed aggregate
 * {@link AggregatePushDown}'s, and a query that asks exactly what an earlier one asked of the
 * same snapshot reuses its scan ({@link ScanCache}).
 *
 * <p>Internal Spark API, because the public one cannot do the job:
 * {@code SupportsPushDownCatalystFilters} hands us the Catalyst filters that
 * {@code ParquetScanBuilder.pushFilters} (also internal) needs unchanged; the public V2 path
 * would force a lossy V2 -> V1 round trip ({@code PredicateUtils.toV1} drops OR branches).
 */
public final class LakeScanBuilder
    implements SupportsPushDownCatalystFilters, SupportsPushDownRequiredColumns,
        SupportsPushDownAggregates, SupportsPushDownLimit, SupportsPushDownTopN {
  private final LakeTable table;
  private final CaseInsensitiveStringMap options;
  /** The filters Python plans the scan with ({@link FilterPushDown#forFiles}). */
  private scala.collection.immutable.Seq<Expression> filters = FilterPushDown.none();
  private StructType required;
  /** The pushed aggregate's answer ({@link #pushAggregation}); null: rows are read. */
  private Scan aggregate;
  /**
   * A pushed {@code LIMIT} / top-N ({@link #pushLimit}, {@link #pushTopN}): {@code limit} and
   * {@code order} keys of the {@code plan_scan} payload; empty: none.
   */
  private final ObjectNode pushed = lakeskip.jvm.bridge.Bridge.JSON.createObjectNode();
  /** A top-N over a filter, from the relation's options ({@link LakeTopN}); null: none. */
  private final JsonNode filteredTopN;
  /** Columns not offered as runtime filter attributes ({@link LakeJoinKeys}). */
  private final java.util.SortedSet<String> noRuntimeFilter = new java.util.TreeSet<>();

  public LakeScanBuilder(LakeTable table, CaseInsensitiveStringMap options) {
    this.table = table;
    String noRuntime = options.get(LakeJoinKeys.NO_RUNTIME_FILTER);
    if (noRuntime != null) {
      for (String c : noRuntime.split(",")) {
        if (!c.isEmpty()) {
          noRuntimeFilter.add(c);
        }
      }
      Map<String, String> rest = new HashMap<>(options.asCaseSensitiveMap());
      rest.remove(LakeJoinKeys.NO_RUNTIME_FILTER);
      options = new CaseInsensitiveStringMap(rest);
    }
    String topN = options.get(LakeTopN.OPTION);
    JsonNode parsed = null;
    if (topN != null) {
      try {
        parsed = lakeskip.jvm.bridge.Bridge.JSON.readTree(topN);
      } catch (java.io.IOException e) {
        parsed = null; // not ours to fail a query over: read every file
      }
      Map<String, String> rest = new HashMap<>(options.asCaseSensitiveMap());
      rest.remove(LakeTopN.OPTION);
      options = new CaseInsensitiveStringMap(rest);
    }
    this.filteredTopN = parsed;
    this.options = options;
  }

  @Override
  public scala.collection.immutable.Seq<Expression> pushFilters(
      scala.collection.immutable.Seq<Expression> filters) {
    this.filters = FilterPushDown.forFiles(table, filters);
    return FilterPushDown.postScan(table, filters);
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
   * Without GROUP BY, or grouped by partition columns, the answer from the manifests is the
   * final rows ({@link AggregatePushDown}): Spark then plans no aggregate over the scan.
   * Asked before {@link #pushAggregation}; a refused push-down leaves Spark's aggregate as it
   * was.
   */
  @Override
  public boolean supportCompletePushDown(Aggregation aggregation) {
    return AggregatePushDown.groupColumns(table, aggregation) != null;
  }

  @Override
  public boolean pushAggregation(Aggregation aggregation) {
    aggregate = AggregatePushDown.push(table, filters, aggregation);
    return aggregate != null;
  }

  /**
   * Whether a pushed LIMIT may narrow the files: a plain append-style scan. Spark pushes one
   * only where no filter stays after the scan (filters on partition columns only), {@link
   * LakeTopN} also over other filters; Python counts towards the limit only the files whose
   * every row the filters hold on ({@code lakeskip.planner.top_n}). Spark keeps its own
   * filter, limit and sort over the rows read.
   */
  private boolean limitable() {
    return aggregate == null && !table.readByMerge() && !table.audit() && table.system.isEmpty();
  }

  @Override
  public boolean pushLimit(int limit) {
    if (!limitable()) {
      return false;
    }
    pushed.removeAll();
    pushed.put(Key.LIMIT, limit);
    return true;
  }

  /**
   * {@code ORDER BY c [, ...] LIMIT k}: Python keeps the files whose stats of {@code c} (the
   * first key, a top-level column) can hold the first {@code k} rows. Partial: Spark sorts.
   */
  @Override
  public boolean pushTopN(SortOrder[] orders, int limit) {
    if (!limitable() || orders.length == 0
        || !(orders[0].expression() instanceof NamedReference)) {
      return false;
    }
    String[] names = ((NamedReference) orders[0].expression()).fieldNames();
    if (names.length != 1 || !Arrays.asList(table.schema.fieldNames()).contains(names[0])) {
      return false;
    }
    pushed.removeAll();
    pushed.put(Key.LIMIT, limit);
    ArrayNode keys = pushed.putArray(Key.ORDER);
    ObjectNode key = keys.addObject();
    key.put(Key.COLUMN, names[0]);
    key.put(Key.DESCENDING, orders[0].direction() == SortDirection.DESCENDING);
    key.put(Key.NULLS_FIRST, orders[0].nullOrdering() == NullOrdering.NULLS_FIRST);
    return true;
  }

  /** Always partial: the kept files hold the first rows and more, Spark limits and sorts. */
  @Override
  public boolean isPartiallyPushed() {
    return true;
  }

  @Override
  public Scan build() {
    if (aggregate != null) {
      return aggregate;
    }
    if (pushed.isEmpty() && filteredTopN != null && filteredTopN.isObject() && limitable()) {
      pushed.setAll((ObjectNode) filteredTopN);
    }
    SparkSession session = SparkSession.active();
    SessionKey key = null;
    if (!table.token.isEmpty()) {
      // everything the plan_scan payload is made of, without making it
      key = ScanCache.key(session, table.token,
          table.name() + "@" + table.snapshotId + (pushed.isEmpty() ? "" : " " + pushed)
              + (noRuntimeFilter.isEmpty() ? "" : " no-runtime-filter " + noRuntimeFilter),
          filters, required, options);
      Scan hit = key == null ? null : ScanCache.reusable(key);
      if (hit != null) {
        return hit instanceof LakeScan ? ((LakeScan) hit).reused().withStream(table, options) : hit;
      }
    }
    JsonNode reply = ScanRequest.plan(table, filters, pushed);
    Scan scan = scan(session, reply);
    if (scan instanceof LakeScan) {
      ((LakeScan) scan).withRuntimeFilter(
          new LakeRuntimeFilter(ScanRequest.payload(table, filters), reply, noRuntimeFilter));
    }
    if (key != null && table.token.equals(reply.path(Key.TOKEN).asText(null))) {
      ScanCache.put(key, scan, reply.path(Key.REPORT_ID).asText(""));
    }
    return scan;
  }

  /**
   * The scan of exactly the files of {@code reply} (a {@code plan_scan}-shaped reply: a
   * streaming read's micro-batch), every column of the table, {@code filters} pushed into
   * Parquet as a batch read's.
   */
  public static Scan ofFiles(LakeTable table, CaseInsensitiveStringMap options,
      scala.collection.immutable.Seq<Expression> filters, JsonNode reply) {
    LakeScanBuilder b = new LakeScanBuilder(table, options);
    b.filters = filters;
    return b.scan(SparkSession.active(), reply);
  }

  /**
   * The scan of a primary-key table's streaming micro-batch ({@code stream_plan} with {@code
   * changes}): its files read as written, new {@code +I} / {@code +U} versions only ({@link
   * lakeskip.jvm.read.stream.LakeChangeScan}).
   */
  public static Scan ofChanges(LakeTable table, CaseInsensitiveStringMap options,
      scala.collection.immutable.Seq<Expression> filters, JsonNode reply) {
    SparkSession session = SparkSession.active();
    LakeFileIndex index =
        LakeFileIndex.of(session, table.partitionSchema(), ScanFiles.of(reply.path(Key.FILES)));
    StructField seq = new StructField(lakeskip.jvm.read.stream.LakeChangeScan.SEQUENCE,
        DataTypes.LongType, true, Metadata.empty());
    StructField kind = new StructField(LakePkScan.KIND, DataTypes.ByteType, true, Metadata.empty());
    ParquetScanBuilder parquet = new LakeParquetScanBuilder(session, index,
        table.schema.add(seq).add(kind), table.dataSchema().add(seq).add(kind), options);
    parquet.pushFilters(FilterPushDown.parquet(filters, reply, new HashSet<>(table.partitionKeys)));
    parquet.pruneColumns(table.schema.add(seq).add(kind));
    Map<String, Long> since = new HashMap<>();
    reply.path(Key.CHANGES).fields().forEachRemaining(e -> since.put(e.getKey(), e.getValue().asLong()));
    JsonNode groups = reply.path(Key.EVOLVED);
    Scan scan = evolved(session, table, options, parquet.build(), groups, filesOf(groups),
        s -> new lakeskip.jvm.read.stream.LakeChangeScan(s, since));
    return new LakeScan(scan, table.name(), LakePruning.of(reply.get(Key.PRUNING)))
        .withStream(table, options);
  }

  /** Spark's scan of the files Python kept (with their DVs; merged by key for a PK table). */
  private Scan scan(SparkSession session, JsonNode reply) {
    LakePruning pruning = LakePruning.of(reply.get(Key.PRUNING));
    boolean audit = table.audit();
    if (table.readByMerge()) {
      Scan pk = LakePkScan.create(table, reply, required, options, filters, audit);
      return new LakeScan(audit ? new LakeAuditScan(pk) : pk, table.name(), pruning)
          .withStream(table, options);
    }
    ScanFiles byName = ScanFiles.of(reply.path(Key.FILES));
    LakeFileIndex index = LakeFileIndex.of(session, table.partitionSchema(), byName);
    Map<String, byte[]> vectors = new HashMap<>(byName.vectorsByName());
    JsonNode groups = reply.path(Key.EVOLVED);
    List<ScanFiles> older = filesOf(groups); // read once: their DVs here, their scans below
    for (ScanFiles files : older) { // older schema versions' files too
      vectors.putAll(files.vectorsByName());
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
        new LakeParquetScanBuilder(session, index, schema, dataSchema, options);
    parquet.pushFilters(
        FilterPushDown.parquet(filters, reply, new HashSet<>(table.partitionKeys)));
    if (want != null) {
      parquet.pruneColumns(want);
    }
    Scan scan = parquet.build();
    java.util.function.UnaryOperator<Scan> dv =
        vectors.isEmpty() ? s -> s : s -> new LakeDvScan(s, vectors);
    scan = evolved(session, table, options, scan, groups, older, dv);
    return new LakeScan(audit ? new LakeAuditScan(scan) : scan, table.name(), pruning)
        .withStream(table, options)
        .withAllPushable(reply.path(Key.UNPUSHABLE).size() == 0);
  }

  /** The files of each older schema version's group of a reply's {@code evolved}, in order. */
  public static List<ScanFiles> filesOf(JsonNode groups) {
    List<ScanFiles> out = new ArrayList<>(groups.size());
    for (JsonNode g : groups) {
      out.add(ScanFiles.of(g.path(Key.FILES)));
    }
    return out;
  }

  /** Columns Spark's Parquet reader or lakeskip's key-value layout adds beside the table's. */
  private static final java.util.Set<String> PASS_THROUGH = java.util.Set.of(
      LakeDvScan.ROW_INDEX, LakePkScan.KIND, lakeskip.jvm.read.stream.LakeChangeScan.SEQUENCE);

  /**
   * {@code wrap(byName)} (the files that read right by column name) plus, per older schema
   * version in {@code groups} (their files read already: {@code files}, in the same order),
   * {@code wrap} of a Parquet scan with that version's names and types and no pushed filters,
   * projected onto the first's read schema ({@link LakeEvolvedScan}); just {@code
   * wrap(byName)} when there is none. {@code wrap} (deletion vectors, a stream's changes)
   * reads the columns in {@link #PASS_THROUGH} that {@code byName} reads beside the table's;
   * every part reads them under the same name.
   */
  private static Scan evolved(SparkSession session, LakeTable table,
      CaseInsensitiveStringMap options, Scan byName, JsonNode groups, List<ScanFiles> files,
      java.util.function.UnaryOperator<Scan> wrap) {
    Scan first = wrap.apply(byName);
    if (groups.size() == 0) {
      return first;
    }
    StructType raw = byName.readSchema();
    StructType out = first.readSchema();
    java.util.Set<String> partitions = new java.util.HashSet<>(table.partitionKeys);
    List<Scan> parts = new ArrayList<>();
    List<int[]> sources = new ArrayList<>();
    parts.add(first);
    sources.add(null);
    for (int i = 0; i < groups.size(); i++) {
      JsonNode g = groups.get(i);
      LakeFileIndex index = LakeFileIndex.of(session, table.partitionSchema(), files.get(i));
      StructType stored = StructType.fromDDL(g.path(Key.STORED_SCHEMA).asText());
      JsonNode names = g.path(Key.STORED_NAMES);
      List<StructField> want = new ArrayList<>();
      for (StructField f : raw.fields()) {
        if (partitions.contains(f.name())) {
          want.add(f);
        } else if (PASS_THROUGH.contains(f.name())) {
          stored = stored.add(f);
          want.add(f);
        } else if (names.hasNonNull(f.name())) {
          want.add(stored.apply(names.get(f.name()).asText()));
        }
      }
      StructType full = stored;
      for (StructField p : table.partitionSchema().fields()) {
        full = full.add(p);
      }
      ParquetScanBuilder parquet = new ParquetScanBuilder(session, index, full, stored, options);
      parquet.pruneColumns(new StructType(want.toArray(new StructField[0])));
      Scan part = wrap.apply(parquet.build());
      StructType read = part.readSchema();
      int[] src = new int[out.fields().length];
      for (int j = 0; j < src.length; j++) {
        String name = out.fields()[j].name();
        String from = partitions.contains(name) || PASS_THROUGH.contains(name) ? name
            : names.hasNonNull(name) ? names.get(name).asText() : null;
        src[j] = from == null ? -1 : read.fieldIndex(from);
      }
      parts.add(part);
      sources.add(src);
    }
    return new LakeEvolvedScan(parts, sources, out);
  }
}
