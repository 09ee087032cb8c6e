package lakeskip.jvm.read;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.cache.Lru;
import lakeskip.jvm.cache.SessionKey;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.paths.SparkPath;
import org.apache.spark.paths.SparkPath$;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.FileSourceOptions$;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection$;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.execution.datasources.FilePartition$;
import org.apache.spark.sql.execution.datasources.FilePruningRunner;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata$;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.PartitionPath;
import org.apache.spark.sql.execution.datasources.PartitionSpec;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScan;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Exactly the files Python kept, with their partition values from the manifest (no listing,
 * no parsing of directory names, so NULL partitions and Paimon's legacy spellings are exact).
 *
 * <p>Internal Spark API: {@code ParquetScanBuilder} only accepts a
 * {@code PartitioningAwareFileIndex}; subclassing it with an explicit {@link PartitionSpec}
 * lets Spark's own partition pruning and split planning run unchanged where a scan's filters
 * need Spark's listing. A plain Parquet scan's splits are made here from the file columns,
 * equal to Spark's ({@link #splits}); the listing (statuses, paths) is built only when Spark
 * asks for it (an unpartitioned index's root paths in a scan's metadata, inputFiles).
 */
public final class LakeFileIndex extends PartitioningAwareFileIndex {
  private final PartitionSpec spec;
  private final ScanFiles files;
  /**
   * Per directory position: the qualified URI prefix its plain-named files' paths are that
   * prefix and the name (checked on the directory's first such file against the path Spark
   * makes: {@code new Path}, {@code makeQualified}), or null: each file's path made as Spark
   * makes it.
   */
  private final String[] dirBase;
  private FileSystem fs;
  /** The files as Spark lists them: per partition (one group if unpartitioned), in order. */
  private final int[][] groups;
  private final InternalRow[] groupValues;
  /** Each partition's directory (the key of its files); empty when unpartitioned. */
  private final Path[] groupDirs;
  private final long totalSize;
  /** The file statuses and Spark's maps of them, made on first use ({@link #listed}). */
  private Listed listed;

  private static final String[] NO_HOSTS = new String[0];

  /** Indexes by (session, partition schema, the reply's file list): see {@link #of}. */
  private static final Lru<SessionKey, LakeFileIndex> INDEXES = new Lru<>(16);

  /**
   * The index of exactly these files, shared with earlier queries that kept the same files.
   * Why: the superclass constructor copies the session's whole Hadoop configuration (over a
   * thousand entries, a millisecond or two) on every query; a repeated query on an unchanged
   * snapshot keeps the same files (the key is their content: paths, sizes, modification
   * times, partition values and DVs), and any commit that changes them changes the key.
   * Equality is identity: two scans of one query over the same files share one index, as
   * they may share a read.
   */
  public static LakeFileIndex of(SparkSession session, StructType partitionSchema,
      ScanFiles files) {
    SessionKey key = new SessionKey(session, partitionSchema.json(), files);
    LakeFileIndex hit = INDEXES.get(key);
    if (hit != null) {
      return hit;
    }
    LakeFileIndex built = new LakeFileIndex(session, partitionSchema, files);
    INDEXES.put(key, built);
    return built;
  }

  /** How many files the index holds. */
  public int fileCount() {
    return files.size();
  }

  /**
   * No per-file object is made here: the files' statuses only when Spark asks for them
   * ({@link #listed}), the splits of a Parquet scan straight from the columns ({@link
   * #splits}).
   */
  private LakeFileIndex(SparkSession session, StructType partitionSchema, ScanFiles files) {
    super(
        session,
        scala.collection.immutable.Map$.MODULE$.<String, String>empty(),
        Option.empty(),
        PartitioningAwareFileIndex.$lessinit$greater$default$4());
    this.files = files;
    boolean partitioned = partitionSchema.fields().length > 0;
    int n = files.size();
    this.dirBase = new String[files.dirCount()];
    boolean[] checked = new boolean[dirBase.length];
    // files by partition, equal values (their JSON text) together, in order of first file
    int[] slot = new int[files.partitionCount()];
    java.util.Arrays.fill(slot, -1);
    Map<String, Integer> slotOf = new LinkedHashMap<>();
    List<InternalRow> values = new ArrayList<>();
    int[] groupOf = new int[n];
    int[] count = new int[partitioned ? Math.max(1, files.partitionCount()) : 1];
    long total = 0;
    for (int i = 0; i < n; i++) {
      total += files.fileSize(i);
      int d = files.dir(i);
      if (d >= 0 && !checked[d] && plain(files.name(i))) {
        checked[d] = true;
        dirBase[d] = base(i);
      }
      if (partitioned) {
        int p = files.partition(i);
        if (slot[p] < 0) {
          JsonNode v = files.partitionValues(p);
          Integer known = slotOf.get(v.toString());
          if (known == null) {
            known = values.size();
            slotOf.put(v.toString(), known);
            values.add(row(partitionSchema, v));
          }
          slot[p] = known;
        }
        groupOf[i] = slot[p];
        count[slot[p]]++;
      } else {
        count[0]++;
      }
    }
    if (!partitioned) {
      values.add(InternalRow.empty());
    }
    int g = values.size();
    this.groups = new int[g][];
    for (int j = 0; j < g; j++) {
      groups[j] = new int[count[j]];
    }
    int[] filled = new int[g];
    for (int i = 0; i < n; i++) {
      int j = groupOf[i];
      groups[j][filled[j]++] = i;
    }
    this.groupValues = values.toArray(new InternalRow[0]);
    this.totalSize = total;
    List<PartitionPath> partitions = new ArrayList<>();
    this.groupDirs = new Path[partitioned ? g : 0];
    if (partitioned) {
      Set<Path> used = new HashSet<>();
      for (int j = 0; j < g; j++) {
        Path dir = path(groups[j][0]).getParent();
        if (!used.add(dir)) {
          // two partitions' files in one directory (external paths): a key of its own
          dir = new Path(dir, "__lakeskip_partition_" + j);
          used.add(dir);
        }
        groupDirs[j] = dir;
        partitions.add(new PartitionPath(groupValues[j], dir));
      }
    }
    this.spec = new PartitionSpec(partitionSchema, CollectionConverters.asScala(partitions).toList());
  }

  /**
   * The URI prefix of file {@code i}'s directory (its name plain): the one its path as Spark
   * makes it has before the name, where a path made of that prefix and a plain name is the
   * same path with the same text; else null.
   */
  private String base(int i) {
    String name = files.name(i);
    Path path = qualified(i);
    String uri = path.toUri().toString();
    if (!uri.endsWith("/" + name)) {
      return null;
    }
    Path fast = new Path(java.net.URI.create(uri));
    boolean same = fast.equals(path) && fast.toString().equals(path.toString())
        && fast.toUri().toString().equals(uri);
    return same ? uri.substring(0, uri.length() - name.length()) : null;
  }

  /** File {@code i}'s path as Spark makes it from the text: {@code new Path}, qualified. */
  private Path qualified(int i) {
    Path path = new Path(files.path(i));
    try {
      if (fs == null) {
        fs = path.getFileSystem(hadoopConf());
      }
      return fs.makeQualified(path);
    } catch (IOException e) {
      throw Bridge.error("lakeskip: cannot resolve " + path + ": " + e.getMessage(), e);
    }
  }

  /** The prefix file {@code i}'s path is made of with its name, or null (see dirBase). */
  private String prefix(int i) {
    int d = files.dir(i);
    return d >= 0 && dirBase[d] != null && plain(files.name(i)) ? dirBase[d] : null;
  }

  /** File {@code i}'s path (its status's). */
  private Path path(int i) {
    String base = prefix(i);
    return base != null ? new Path(java.net.URI.create(base + files.name(i))) : qualified(i);
  }

  /** The statuses of every file and Spark's views of them. */
  private static final class Listed {
    scala.collection.immutable.Seq<FileStatus> all;
    scala.collection.immutable.Map<Path, FileStatus[]> leafDirs;
    scala.collection.immutable.Seq<Path> roots;
    scala.collection.mutable.LinkedHashMap<Path, FileStatus> leafFiles;
  }

  private synchronized Listed listed() {
    if (listed != null) {
      return listed;
    }
    int n = files.size();
    FileStatus[] statuses = new FileStatus[n];
    for (int i = 0; i < n; i++) {
      statuses[i] =
          new FileStatus(files.fileSize(i), false, 1, 128L * 1024 * 1024, files.mtime(i), path(i));
    }
    Listed l = new Listed();
    List<Path> rootList = new ArrayList<>();
    scala.collection.immutable.Map<Path, FileStatus[]> dirs =
        scala.collection.immutable.Map$.MODULE$.<Path, FileStatus[]>empty();
    if (groupDirs.length > 0) {
      for (int j = 0; j < groups.length; j++) {
        FileStatus[] in = new FileStatus[groups[j].length];
        for (int k = 0; k < in.length; k++) {
          in[k] = statuses[groups[j][k]];
        }
        dirs = dirs.updated(groupDirs[j], in);
        rootList.add(groupDirs[j]);
      }
    } else {
      Set<Path> seen = new java.util.LinkedHashSet<>();
      for (FileStatus f : statuses) {
        seen.add(f.getPath());
      }
      rootList.addAll(seen);
    }
    l.all = CollectionConverters.asScala(java.util.Arrays.asList(statuses)).toList();
    l.leafDirs = dirs;
    l.roots = CollectionConverters.asScala(rootList).toList();
    listed = l;
    return l;
  }

  /**
   * The splits Spark's {@code FileScan.partitions} makes of {@code scan} over this index,
   * made from the file columns: per partition its files' splits (a splitable file cut every
   * {@code maxSplitBytes}), largest first, packed by Spark's {@code
   * FilePartition.getFilePartitions}; files Spark lists are skipped as it skips them (empty,
   * or a name its {@code isDataPath} rejects). No status, path, listing or per-file closure:
   * at 100,000 files, Spark's way built all of those and compiled its per-file code (C2) in
   * the query's first plan. Null where Spark's own way is needed: a scan over another index,
   * with partition filters, file-metadata filters, or a partition column it cannot find.
   */
  public InputPartition[] splits(ParquetScan scan) {
    if (scan.fileIndex() != this || !scan.partitionFilters().isEmpty()
        || new FilePruningRunner(scan.dataFilters()).fileMetadataFilterOpt().isDefined()) {
      return null;
    }
    SparkSession session = scan.sparkSession();
    SQLConf conf = session.sessionState().conf();
    InternalRow[] values = readValues(scan.readPartitionSchema(), conf.caseSensitiveAnalysis());
    if (values == null) {
      return null;
    }
    long open = conf.filesOpenCostInBytes();
    java.util.regex.Matcher ignored = FileSourceOptions$.MODULE$
        .compileIgnoredPathSegmentRegex(ignoredPathSegmentRegex()).matcher("");
    int n = files.size();
    String[] uri = new String[n];
    long total = 0;
    Path any = null;
    for (int[] group : groups) {
      for (int i : group) {
        String base = prefix(i);
        String name;
        if (base != null) {
          name = files.name(i);
          uri[i] = base + name;
        } else {
          Path path = qualified(i);
          name = path.getName();
          uri[i] = path.toUri().toString();
          any = path;
        }
        if (files.fileSize(i) > 0 && dataPath(name, ignored)) {
          total += files.fileSize(i) + open;
        } else {
          uri[i] = null; // not listed
        }
      }
    }
    long bytes = total;
    long max = FilePartition$.MODULE$.maxSplitBytes(session, (scala.Function0<Object>) () -> bytes);
    if (max <= 0) {
      return null; // Spark's own way (a step of 0 it refuses)
    }
    boolean splitable = scan.isSplitable(any != null || n == 0 ? any : path(0));
    scala.collection.immutable.Map<String, Object> metadata =
        FileStatusWithMetadata$.MODULE$.apply$default$2();
    List<PartitionedFile> out = new ArrayList<>(n);
    java.util.Comparator<PartitionedFile> largest =
        java.util.Comparator.comparingLong(PartitionedFile::length).reversed();
    for (int j = 0; j < groups.length; j++) {
      int from = out.size();
      for (int i : groups[j]) {
        if (uri[i] == null) {
          continue;
        }
        SparkPath path = SparkPath$.MODULE$.fromUrlString(uri[i]);
        long len = files.fileSize(i);
        long step = splitable ? max : len;
        for (long at = 0; at < len; at += step) {
          out.add(new PartitionedFile(values[j], path, at, Math.min(len - at, step), NO_HOSTS,
              files.mtime(i), len, metadata));
        }
      }
      out.subList(from, out.size()).sort(largest); // stable, as Spark's sortBy
    }
    return CollectionConverters.asJava(FilePartition$.MODULE$.getFilePartitions(
        session, CollectionConverters.asScala(out).toList(), max))
        .toArray(new InputPartition[0]);
  }

  /**
   * Each partition's values as {@code FileScan.partitions} hands them to its splits: as listed
   * where the scan reads every partition column in order, else projected to those it reads
   * (an {@code UnsafeRow} per partition); null where a read column is no partition column.
   */
  private InternalRow[] readValues(StructType read, boolean caseSensitive) {
    StructField[] all = partitionSchema().fields();
    int[] at = new int[read.fields().length];
    boolean same = at.length == all.length;
    for (int r = 0; r < at.length; r++) {
      at[r] = -1;
      String want = normal(read.fields()[r].name(), caseSensitive);
      for (int k = 0; k < all.length && at[r] < 0; k++) {
        if (normal(all[k].name(), caseSensitive).equals(want)) {
          at[r] = k;
        }
      }
      if (at[r] < 0) {
        return null;
      }
      same &= at[r] == r;
    }
    if (same) {
      return groupValues;
    }
    List<org.apache.spark.sql.catalyst.expressions.Expression> refs = new ArrayList<>();
    for (int k : at) {
      refs.add(new BoundReference(k, all[k].dataType(), all[k].nullable()));
    }
    UnsafeProjection project =
        UnsafeProjection$.MODULE$.create(CollectionConverters.asScala(refs).toList());
    InternalRow[] out = new InternalRow[groupValues.length];
    for (int j = 0; j < out.length; j++) {
      out[j] = project.apply(groupValues[j]).copy();
    }
    return out;
  }

  private static String normal(String name, boolean caseSensitive) {
    return caseSensitive ? name : name.toLowerCase(java.util.Locale.ROOT);
  }

  /** Spark's {@code PartitioningAwareFileIndex.isDataPath} of a file named {@code name}. */
  private static boolean dataPath(String name, java.util.regex.Matcher ignored) {
    if (name.startsWith("_") && name.indexOf('=') >= 0) {
      return true;
    }
    if (name.startsWith("_common_metadata") || name.startsWith("_metadata")) {
      return false;
    }
    return !ignored.reset(name).find();
  }

  /**
   * A file name whose path is its directory's URI and the name as it is: nothing to quote or
   * normalise (no {@code /}, {@code %}, {@code :}, space; not {@code .} or {@code ..}).
   */
  private static boolean plain(String name) {
    if (name.isEmpty() || name.equals(".") || name.equals("..")) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
          || c == '_' || c == '.')) {
        return false;
      }
    }
    return true;
  }

  private static GenericInternalRow row(StructType schema, JsonNode values) {
    Object[] out = new Object[schema.fields().length];
    for (int i = 0; i < out.length; i++) {
      out[i] = value(schema.fields()[i].dataType(), values.get(i));
    }
    return new GenericInternalRow(out);
  }

  /** A partition value in Catalyst's internal form, from Python's typed JSON. */
  public static Object value(DataType t, JsonNode v) {
    if (v == null || v.isNull()) {
      return null;
    }
    if (t instanceof BooleanType) return v.asBoolean();
    if (t instanceof ByteType) return (byte) v.asInt();
    if (t instanceof ShortType) return (short) v.asInt();
    if (t instanceof IntegerType || t instanceof DateType) return v.asInt();
    if (t instanceof LongType || t instanceof TimestampType || t instanceof TimestampNTZType) {
      return v.asLong();
    }
    if (t instanceof FloatType) return (float) number(v);
    if (t instanceof DoubleType) return number(v);
    if (t instanceof DecimalType) {
      DecimalType d = (DecimalType) t;
      return Decimal.apply(new BigDecimal(v.asText()), d.precision(), d.scale());
    }
    if (t instanceof StringType) return UTF8String.fromString(v.asText());
    if (t instanceof BinaryType) return Base64.getDecoder().decode(v.asText());
    throw Bridge.error("lakeskip: unsupported partition column type " + t.simpleString(), null);
  }

  private static double number(JsonNode v) {
    return v.isNumber() ? v.asDouble() : Double.parseDouble(v.asText());
  }

  @Override
  public PartitionSpec partitionSpec() {
    return spec;
  }

  @Override
  public scala.collection.mutable.LinkedHashMap<Path, FileStatus> leafFiles() {
    Listed l = listed();
    synchronized (this) {
      if (l.leafFiles == null) {
        scala.collection.mutable.LinkedHashMap<Path, FileStatus> m =
            new scala.collection.mutable.LinkedHashMap<>();
        for (scala.collection.Iterator<FileStatus> it = l.all.iterator(); it.hasNext(); ) {
          FileStatus f = it.next();
          m.update(f.getPath(), f);
        }
        l.leafFiles = m;
      }
      return l.leafFiles;
    }
  }

  @Override
  public scala.collection.immutable.Map<Path, FileStatus[]> leafDirToChildrenFiles() {
    return listed().leafDirs;
  }

  /** Each partition's directory; unpartitioned: each file. */
  @Override
  public scala.collection.immutable.Seq<Path> rootPaths() {
    if (groupDirs.length > 0) {
      return CollectionConverters.asScala(java.util.Arrays.asList(groupDirs)).toList();
    }
    return listed().roots;
  }

  /**
   * The kept files, computed once. Spark's version resolves a FileSystem and qualifies every
   * root path on each call, and an unpartitioned table has one root per file; Spark calls it
   * several times per query (statistics, split planning, inputFiles).
   */
  @Override
  public scala.collection.immutable.Seq<FileStatus> allFiles() {
    return listed().all;
  }

  /** The files' bytes ({@code allFiles}' lengths summed, as Spark's), from the columns. */
  @Override
  public long sizeInBytes() {
    return totalSize;
  }

  @Override
  public void refresh() {}

  @Override
  public boolean equals(Object o) {
    return this == o;
  }

  @Override
  public int hashCode() {
    return System.identityHashCode(this);
  }

  @Override
  public String toString() {
    return "LakeFileIndex(" + files.size() + " files)";
  }
}
