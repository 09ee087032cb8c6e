package lakeskip.jvm.read;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import lakeskip.jvm.cache.ReaderFactories;
import lakeskip.jvm.cache.ScanCache;
import lakeskip.jvm.catalog.LakeTable;
import lakeskip.jvm.read.pk.LakeDvScan;
import lakeskip.jvm.read.pk.LakePkScan;
import lakeskip.jvm.read.stream.LakeMicroBatchStream;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.SupportsRuntimeV2Filtering;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
import org.apache.spark.sql.execution.datasources.v2.FileScan;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScan;
import org.apache.spark.sql.internal.connector.SupportsMetadata;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Spark's scan of the kept files, planned once per query.
 *
 * <p>Why it exists: {@code BatchScanExec} keeps its reader factory and input partitions in lazy
 * fields of the node, and physical planning copies the node (the strategy asks
 * {@code supportsColumnar}, then {@code RemoveRedundantProjects} asks again on a copy), so a bare
 * {@code ParquetScan} builds its reader factory at least twice per query, and every build
 * broadcasts the whole Hadoop configuration (serialised and gzipped): measured as the largest
 * JVM-side cost of planning a catalog query, where plain {@code spark.read.parquet} (V1) pays
 * one broadcast. Here every copy shares one factory and one list of splits, and a query that
 * needs the same factory as an earlier one (same schemas, pushed filters, options and
 * configuration) reuses it ({@link ReaderFactories}): no broadcast at all.
 *
 * <p>It also shows the planner's decision in Spark's own tools ({@link LakePruning}): a
 * {@code Pruning} part of the EXPLAIN description and metadata, and driver-side custom metrics
 * (files total, kept, skipped per tier / index / column, index files and bytes read, planning
 * time) in the SQL tab and {@code SQLMetrics} of the executed plan.
 *
 * <p>Runtime filters ({@link LakeRuntimeFilter}): Spark's dynamic pruning hands the keys a
 * join found to {@link #filter}; the files Python no longer keeps are dropped from this scan's
 * splits (the reader factory stays: it does not depend on the files), and its EXPLAIN text
 * and metrics become the figures with the runtime tier. The state is this object's own: a
 * {@link #reused} copy for a later query starts from the planned files again.
 *
 * <p>Statistics of a file scan are plain Spark's figure over the kept files ({@link
 * #estimateStatistics}: the same join strategies as {@code spark.read.parquet}), also where
 * the files are read with deletion vectors, merged by key or by older schemas' names. Everything
 * else is the inner scan's: read schema, the rest of the EXPLAIN text and metadata ({@code
 * PushedFilters}, {@code Location}), and equality, but for the order of commutative pushed
 * filters ({@link #equals}).
 */
public final class LakeScan
    implements Scan, Batch, SupportsReportStatistics, SupportsMetadata,
        SupportsRuntimeV2Filtering {
  private final Scan inner;
  private final String table;
  /** The planner's decision for this scan (EXPLAIN text, Spark metrics); null: none. */
  private final LakePruning pruning;
  /** The reader factory and splits, built once and shared with {@link #reused} copies. */
  private final Built built;
  /** Runtime filtering of this scan (null: none). */
  private LakeRuntimeFilter runtime;
  /** After {@link #filter}: the splits left and the figures with the runtime tier. */
  private volatile InputPartition[] narrowed;
  private volatile LakePruning runtimePruning;
  /** Whether Spark handed this scan runtime filters ({@link #filter}) in this query. */
  private volatile boolean filtered;
  /** {@link #inner} as compared ({@link #comparable}), built on first use. */
  private volatile Scan canonical;

  /** The table and options a streaming read of it starts from (null: not streamable). */
  private LakeTable streamTable;
  private CaseInsensitiveStringMap streamOptions;

  private static final class Built {
    PartitionReaderFactory factory;
    InputPartition[] partitions;
  }

  LakeScan(Scan inner, String table, LakePruning pruning) {
    this(inner, table, pruning, new Built());
  }

  private LakeScan(Scan inner, String table, LakePruning pruning, Built built) {
    this.inner = inner;
    this.table = table;
    this.pruning = pruning;
    this.built = built;
  }

  /**
   * This scan for a later query that reuses it ({@link ScanCache}): the same files, splits
   * and reader factory; its pruning figures say that nothing was planned for that query.
   */
  LakeScan reused() {
    LakeScan copy = new LakeScan(inner, table, pruning == null ? null : pruning.reused(), built);
    copy.runtime = runtime;
    copy.allPushable = allPushable;
    return copy;
  }

  /** Let {@code spark.readStream} read this scan's table ({@link #toMicroBatchStream}). */
  LakeScan withStream(LakeTable table, CaseInsensitiveStringMap options) {
    this.streamTable = table;
    this.streamOptions = options;
    return this;
  }

  /** A streaming read of the table: its own plans, one per micro-batch. */
  @Override
  public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
    if (streamTable == null) {
      throw new UnsupportedOperationException(description() + ": not a streaming source");
    }
    return new LakeMicroBatchStream(streamTable, streamOptions, checkpointLocation);
  }

  /** Let Spark's runtime filters narrow this scan (the {@code plan_scan} payload and reply). */
  LakeScan withRuntimeFilter(LakeRuntimeFilter runtime) {
    this.runtime = runtime;
    return this;
  }

  @Override
  public NamedReference[] filterAttributes() {
    return runtime == null ? new NamedReference[0] : runtime.attributes(readSchema());
  }

  @Override
  public void filter(Predicate[] predicates) {
    if (runtime == null) {
      return;
    }
    filtered = true;
    runtime.filtered();
    LakeRuntimeFilter.Kept kept = runtime.apply(predicates);
    if (kept == null) {
      return;
    }
    InputPartition[] left = LakeRuntimeFilter.narrow(planned(), kept.names, session());
    if (left != null) {
      narrowed = left;
      runtimePruning = kept.pruning;
    }
  }

  /** The session of the inner file scan (null when it is not one: no splits packed again). */
  private org.apache.spark.sql.SparkSession session() {
    Scan files = inner instanceof LakeDvScan ? ((LakeDvScan) inner).inner() : inner;
    return files instanceof FileScan ? ((FileScan) files).sparkSession() : null;
  }

  /** The figures shown: with the runtime tier once {@link #filter} narrowed the scan. */
  private LakePruning shown() {
    LakePruning r = runtimePruning;
    return r != null ? r : pruning;
  }

  /** Whether Spark's Parquet scan may push every data filter (no NaN-unsafe column). */
  private boolean allPushable;

  LakeScan withAllPushable(boolean all) {
    this.allPushable = all;
    return this;
  }

  /**
   * The Parquet scan this scan may be planned as by Spark's V1 file scan ({@link
   * lakeskip.jvm.read.v1.LakeV1Scan}), or null: a plain Parquet scan of a {@link
   * LakeFileIndex} (no deletion vectors, key merge, older schemas, audit or pushed
   * aggregate), every filter safe for Parquet's row-group
   * statistics, and with {@code keptAllOnly} only where the planner kept every file.
   */
  public ParquetScan v1Candidate(boolean keptAllOnly) {
    if (!(inner instanceof ParquetScan) || !allPushable || narrowed != null) {
      return null;
    }
    ParquetScan p = (ParquetScan) inner;
    if (!(p.fileIndex() instanceof LakeFileIndex) || p.pushedAggregate().isDefined()) {
      return null;
    }
    if (keptAllOnly && (pruning == null || !pruning.keptAll())) {
      return null;
    }
    return p;
  }

  /** The table's name, as the scan's node shows it. */
  public String tableName() {
    return table;
  }

  /** The EXPLAIN part of the planner's decision ({@code Pruning: ...}), or "". */
  public String pruningText() {
    LakePruning p = shown();
    return p == null ? "" : "Pruning: " + p.text();
  }

  /** The wrapped scan ({@code lakeskip.spark.input_files} reads its file index). */
  public Scan inner() {
    return inner;
  }

  /** The kept files' index, or null when the inner scan is not a file scan. */
  public PartitioningAwareFileIndex fileIndex() {
    Scan files = inner instanceof LakeDvScan ? ((LakeDvScan) inner).inner() : inner;
    return files instanceof FileScan ? ((FileScan) files).fileIndex() : null;
  }

  @Override
  public StructType readSchema() {
    return inner.readSchema();
  }

  @Override
  public String description() {
    LakePruning p = shown();
    return p == null ? inner.description() : inner.description() + ", Pruning: " + p.text();
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    InputPartition[] left = narrowed;
    return left != null ? left : planned();
  }

  /**
   * The splits of every planned file: a Parquet scan of a {@link LakeFileIndex} made by the
   * index from its columns ({@link LakeFileIndex#splits}: Spark's splits, without its per-file
   * objects), any other as its scan plans them.
   */
  private InputPartition[] planned() {
    synchronized (built) {
      if (built.partitions == null) {
        PartitioningAwareFileIndex index =
            inner instanceof ParquetScan ? ((ParquetScan) inner).fileIndex() : null;
        InputPartition[] splits = index instanceof LakeFileIndex
            ? ((LakeFileIndex) index).splits((ParquetScan) inner) : null;
        built.partitions = splits != null ? splits : inner.toBatch().planInputPartitions();
      }
      return built.partitions;
    }
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    synchronized (built) {
      if (built.factory == null) {
        built.factory =
            new ReadErrors(ReaderFactories.of(inner), table);
      }
      return built.factory;
    }
  }

  @Override
  public ColumnarSupportMode columnarSupportMode() {
    return inner.columnarSupportMode();
  }

  @Override
  public CustomMetric[] supportedCustomMetrics() {
    CustomMetric[] own = inner.supportedCustomMetrics();
    return pruning == null ? own : concat(own, pruning.metrics());
  }

  /**
   * Called by {@code BatchScanExec.inputRDD} once per execution, after any {@link #filter}.
   * When no runtime filter arrived, the columns only an index narrows are not declared again
   * by the scan a repetition reuses ({@link LakeRuntimeFilter#unused}), unless another scan
   * of this execution sharing the runtime filter state got one (a CTE read twice: one
   * reference joined, one not).
   */
  @Override
  public CustomTaskMetric[] reportDriverMetrics() {
    if (runtime != null && !filtered) {
      runtime.unused();
    }
    CustomTaskMetric[] own = inner.reportDriverMetrics();
    LakePruning p = shown();
    return p == null ? own : concat(own, p.valuesOf(pruning));
  }

  private static <T> T[] concat(T[] a, T[] b) {
    T[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /**
   * The size plain {@code spark.read.parquet} over the same files would report, which Spark's
   * join planning (broadcast or shuffle, and so dynamic pruning, planned only against a
   * broadcast) is tuned to. Spark's V2 {@code FileScan} scales the files' bytes by the read
   * columns' share of the row ({@code readSchema.defaultSize / schema.defaultSize}); the V1
   * relation plain Spark plans scales by {@code (8 + read) / (8 + all)} (a {@code Project}'s
   * estimate: 8 bytes of row overhead), so a narrow read of a wide table came out at down to
   * half of plain Spark's figure and was broadcast where plain Spark shuffles (TPC-H SF 1's
   * q21: {@code orders} read for its key and status, 10.4 MB against plain Spark's 12.5 MB,
   * for a 10 MiB threshold; the broadcast then also fed its 730,000 keys to a dynamic pruning
   * subquery on {@code lineitem}). Here a file scan reports V1's figure over its kept files.
   */
  @Override
  public Statistics estimateStatistics() {
    List<FileScan> files = new ArrayList<>();
    fileScans(inner, files);
    if (!files.isEmpty()) {
      long sum = 0;
      for (FileScan f : files) {
        sum += v1Size(f);
      }
      long size = sum;
      return new Statistics() {
        @Override
        public java.util.OptionalLong sizeInBytes() {
          return java.util.OptionalLong.of(size);
        }

        @Override
        public java.util.OptionalLong numRows() {
          return java.util.OptionalLong.empty();
        }
      };
    }
    if (inner instanceof SupportsReportStatistics) {
      return ((SupportsReportStatistics) inner).estimateStatistics();
    }
    return new Statistics() {
      @Override
      public java.util.OptionalLong sizeInBytes() {
        return java.util.OptionalLong.empty();
      }

      @Override
      public java.util.OptionalLong numRows() {
        return java.util.OptionalLong.empty();
      }
    };
  }

  /**
   * The file scans {@code s} reads through: itself, or those under a scan rewriting their rows
   * (deletion vectors, audit, a stream's changes), the parts of a schema-evolved scan, and the
   * Parquet scans a primary-key table's merge reads. A scan of those files is sized as the
   * files are (none of them: Spark would take its default, far above any broadcast threshold,
   * and never broadcast a small table with deletion vectors or a primary key).
   */
  private static void fileScans(Scan s, List<FileScan> out) {
    if (s instanceof FileScan) {
      out.add((FileScan) s);
    } else if (s instanceof RowRewriteScan) {
      fileScans(((RowRewriteScan) s).inner(), out);
    } else if (s instanceof LakeEvolvedScan) {
      for (Scan part : ((LakeEvolvedScan) s).parts()) {
        fileScans(part, out);
      }
    } else if (s instanceof LakePkScan) {
      for (Scan part : ((LakePkScan) s).fileScans()) {
        fileScans(part, out);
      }
    }
  }

  /** V1's size of {@code files}' read (see {@link #estimateStatistics}). */
  private static long v1Size(FileScan files) {
    long bytes = (long) (files.sparkSession().sessionState().conf().fileCompressionFactor()
        * files.fileIndex().sizeInBytes());
    long all = 8L + files.dataSchema().defaultSize()
        + files.fileIndex().partitionSchema().defaultSize();
    long read = 8L + files.readDataSchema().defaultSize()
        + files.readPartitionSchema().defaultSize();
    return java.math.BigInteger.valueOf(bytes).multiply(java.math.BigInteger.valueOf(read))
        .divide(java.math.BigInteger.valueOf(all)).longValue();
  }

  @Override
  public scala.collection.immutable.Map<String, String> getMetaData() {
    scala.collection.immutable.Map<String, String> own =
        inner instanceof SupportsMetadata
            ? ((SupportsMetadata) inner).getMetaData()
            : scala.collection.immutable.Map$.MODULE$.<String, String>empty();
    LakePruning p = shown();
    return p == null ? own : own.updated("Pruning", p.text());
  }

  /**
   * Equal to another lakeskip scan whose inner scan is equal to this one's once the pushed
   * filters' commutative parts are put in one order ({@link #comparable}): Spark reuses an
   * exchange (a broadcast of {@code nation} read twice by TPC-H q7, once with {@code n_name =
   * 'FRANCE' OR n_name = 'GERMANY'}, once the other way round) only for equal scans, and
   * {@code ParquetScan} compares its pushed filters as written, where V1's scan compares
   * canonical ones. Nothing else is loosened: the same files, schemas, options, filters'
   * columns, operators and values.
   */
  @Override
  public boolean equals(Object o) {
    return o instanceof LakeScan && comparable().equals(((LakeScan) o).comparable());
  }

  @Override
  public int hashCode() {
    return comparable().hashCode();
  }

  /** The inner scan, a {@code ParquetScan} with its pushed filters in canonical order. */
  private Scan comparable() {
    Scan c = canonical;
    if (c == null) {
      c = inner instanceof ParquetScan ? CanonicalFilters.of((ParquetScan) inner) : inner;
      canonical = c;
    }
    return c;
  }

  @Override
  public String toString() {
    return inner.toString();
  }

  /**
   * Pushed filters in one order for comparing scans ({@link LakeScan#equals}): the two sides of
   * an {@code And} or an {@code Or} and the values of an {@code In} sorted (by their text, the
   * class of a value first), recursively, also under a {@code Not}; every other filter as it is.
   * Only the order of commutative parts changes, so two filters canonical-equal select the same
   * rows; two that differ in anything else (a column, an operator, a value) stay unequal.
   */
  static final class CanonicalFilters {
    private CanonicalFilters() {}

    private static final Comparator<Object> ORDER =
        Comparator.comparing((Object v) -> v == null ? "" : v.getClass().getName())
            .thenComparing(String::valueOf);

    /** {@code scan} with its pushed filters canonical, everything else the same. */
    static ParquetScan of(ParquetScan scan) {
      Filter[] pushed = scan.pushedFilters();
      Filter[] same = new Filter[pushed.length];
      for (int i = 0; i < pushed.length; i++) {
        same[i] = of(pushed[i]);
      }
      return new ParquetScan(scan.sparkSession(), scan.hadoopConf(), scan.fileIndex(),
          scan.dataSchema(), scan.readDataSchema(), scan.readPartitionSchema(), same,
          scan.options(), scan.pushedAggregate(), scan.partitionFilters(), scan.dataFilters(),
          scan.pushedVariantExtractions());
    }

    /** {@code f} with its commutative parts in canonical order. */
    static Filter of(Filter f) {
      if (f instanceof And) {
        Filter[] two = sorted(of(((And) f).left()), of(((And) f).right()));
        return new And(two[0], two[1]);
      }
      if (f instanceof Or) {
        Filter[] two = sorted(of(((Or) f).left()), of(((Or) f).right()));
        return new Or(two[0], two[1]);
      }
      if (f instanceof Not) {
        return new Not(of(((Not) f).child()));
      }
      if (f instanceof In) {
        Object[] values = ((In) f).values().clone();
        Arrays.sort(values, ORDER);
        return new In(((In) f).attribute(), values);
      }
      return f;
    }

    private static Filter[] sorted(Filter a, Filter b) {
      Filter[] two = {a, b};
      Arrays.sort(two, ORDER);
      return two;
    }
  }
}
