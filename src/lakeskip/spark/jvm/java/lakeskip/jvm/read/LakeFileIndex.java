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
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.execution.datasources.PartitionPath;
import org.apache.spark.sql.execution.datasources.PartitionSpec;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
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
 * lets Spark's own partition pruning and split planning run unchanged.
 */
public final class LakeFileIndex extends PartitioningAwareFileIndex {
  private final PartitionSpec spec;
  /** Made on first use: Spark's planning of this scan does not ask for it. */
  private scala.collection.mutable.LinkedHashMap<Path, FileStatus> leafFiles;
  private final scala.collection.immutable.Map<Path, FileStatus[]> leafDirs;
  private final scala.collection.immutable.Seq<Path> roots;
  private final scala.collection.immutable.Seq<FileStatus> all;

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

  private LakeFileIndex(SparkSession session, StructType partitionSchema, ScanFiles files) {
    super(
        session,
        scala.collection.immutable.Map$.MODULE$.<String, String>empty(),
        Option.empty(),
        PartitioningAwareFileIndex.$lessinit$greater$default$4());
    boolean partitioned = partitionSchema.fields().length > 0;
    // files by partition, equal values (their JSON text) together, in order of first file
    int[] slot = new int[files.partitionCount()];
    Map<String, Integer> slotOf = new LinkedHashMap<>();
    List<List<FileStatus>> groups = new ArrayList<>();
    List<GenericInternalRow> groupValues = new ArrayList<>();
    java.util.Arrays.fill(slot, -1);
    FileSystem fs = null;
    // per directory: the qualified URI its files' paths are made from (a plain name appended:
    // one URI parse, no regex of Path's), or null where a file's path is made as Spark makes
    // it (new Path, makeQualified), which the directory's first such file checks it against
    Map<Integer, String> dirUris = new java.util.HashMap<>();
    int n = files.size();
    List<FileStatus> statuses = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int d = files.dir(i);
      String name = files.name(i);
      String base = d >= 0 && plain(name) ? dirUris.get(d) : null;
      Path path;
      if (base != null) {
        path = new Path(java.net.URI.create(base + name));
      } else {
        path = new Path(files.path(i));
        try {
          if (fs == null) {
            fs = path.getFileSystem(hadoopConf());
          }
          path = fs.makeQualified(path);
        } catch (IOException e) {
          throw Bridge.error("lakeskip: cannot resolve " + path + ": " + e.getMessage(), e);
        }
        if (d >= 0 && plain(name) && !dirUris.containsKey(d)) {
          String uri = path.toUri().toString();
          String prefix = uri.substring(0, Math.max(0, uri.length() - name.length()));
          Path fast = uri.endsWith("/" + name) ? new Path(java.net.URI.create(uri)) : null;
          boolean same = fast != null && fast.equals(path)
              && fast.toString().equals(path.toString());
          dirUris.put(d, same ? prefix : null);
        }
      }
      FileStatus status =
          new FileStatus(files.fileSize(i), false, 1, 128L * 1024 * 1024, files.mtime(i), path);
      statuses.add(status);
      if (partitioned) {
        int p = files.partition(i);
        if (slot[p] < 0) {
          JsonNode values = files.partitionValues(p);
          Integer known = slotOf.get(values.toString());
          if (known == null) {
            known = groups.size();
            slotOf.put(values.toString(), known);
            groups.add(new ArrayList<>());
            groupValues.add(row(partitionSchema, values));
          }
          slot[p] = known;
        }
        groups.get(slot[p]).add(status);
      }
    }
    List<Path> rootList = new ArrayList<>();
    List<PartitionPath> partitions = new ArrayList<>();
    scala.collection.immutable.Map<Path, FileStatus[]> dirs =
        scala.collection.immutable.Map$.MODULE$.<Path, FileStatus[]>empty();
    if (partitioned) {
      Set<Path> used = new HashSet<>();
      for (int i = 0; i < groups.size(); i++) {
        List<FileStatus> g = groups.get(i);
        Path dir = g.get(0).getPath().getParent();
        if (!used.add(dir)) {
          // two partitions' files in one directory (external paths): a key of its own
          dir = new Path(dir, "__lakeskip_partition_" + i);
          used.add(dir);
        }
        dirs = dirs.updated(dir, g.toArray(new FileStatus[0]));
        partitions.add(new PartitionPath(groupValues.get(i), dir));
        rootList.add(dir);
      }
    } else {
      Set<Path> seen = new java.util.LinkedHashSet<>();
      for (FileStatus f : statuses) {
        seen.add(f.getPath());
      }
      rootList.addAll(seen);
    }
    this.all = CollectionConverters.asScala(new ArrayList<>(statuses)).toList();
    this.leafDirs = dirs;
    this.roots = CollectionConverters.asScala(rootList).toList();
    this.spec = new PartitionSpec(partitionSchema, CollectionConverters.asScala(partitions).toList());
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
  public synchronized scala.collection.mutable.LinkedHashMap<Path, FileStatus> leafFiles() {
    if (leafFiles == null) {
      scala.collection.mutable.LinkedHashMap<Path, FileStatus> m =
          new scala.collection.mutable.LinkedHashMap<>();
      for (scala.collection.Iterator<FileStatus> it = all.iterator(); it.hasNext(); ) {
        FileStatus f = it.next();
        m.update(f.getPath(), f);
      }
      leafFiles = m;
    }
    return leafFiles;
  }

  @Override
  public scala.collection.immutable.Map<Path, FileStatus[]> leafDirToChildrenFiles() {
    return leafDirs;
  }

  @Override
  public scala.collection.immutable.Seq<Path> rootPaths() {
    return roots;
  }

  /**
   * The kept files, computed once. Spark's version resolves a FileSystem and qualifies every
   * root path on each call, and an unpartitioned table has one root per file; Spark calls it
   * several times per query (statistics, split planning, inputFiles).
   */
  @Override
  public scala.collection.immutable.Seq<FileStatus> allFiles() {
    return all;
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
    return "LakeFileIndex(" + all.size() + " files)";
  }
}
