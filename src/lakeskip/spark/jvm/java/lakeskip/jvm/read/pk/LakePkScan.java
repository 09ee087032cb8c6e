package lakeskip.jvm.read.pk;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.catalog.LakeTable;
import lakeskip.jvm.read.FilterPushDown;
import lakeskip.jvm.read.LakeAuditScan;
import lakeskip.jvm.read.LakeEvolvedScan;
import lakeskip.jvm.read.LakeFileIndex;
import lakeskip.jvm.read.ScanFiles;
import lakeskip.jvm.read.LakeParquetScanBuilder;
import lakeskip.jvm.read.LakeScanBuilder;
import lakeskip.jvm.read.ReadErrors;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.paths.SparkPath;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BaseOrdering;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.RowOrdering$;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.datasources.FilePartition;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetPartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder;
import org.apache.spark.sql.types.ByteType$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.LongType$;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Merge-on-read of a primary-key table: one input partition per (partition, bucket) with the
 * files Python kept; each file is read by Spark's own Parquet reader (files are sorted by key
 * with unique keys), the files are k-way merged by key (Spark's natural ordering of the key
 * types), and each key's versions become its row by {@link PkMerge} (the table's merge engine
 * and sequence fields). No value filter is pushed into the files being merged (an older
 * version of a key must never come back because its newer version was filtered out); filters
 * on key columns only may skip row groups. Spark applies every filter after the merge. Python
 * planned which files and buckets to read; this class only reads.
 *
 * <p>Internal Spark API, because the public one cannot do the job: {@code ParquetScanBuilder},
 * {@code PartitionedFile}, {@code FilePartition} (Spark's Parquet reader for one file) and
 * {@code RowOrdering} (Catalyst's ordering of internal rows).
 */
public final class LakePkScan implements Scan, Batch {
  static final String SEQUENCE = "_SEQUENCE_NUMBER";
  public static final String KIND = "_VALUE_KIND";
  static final String KEY_PREFIX = "_KEY_";

  private final StructType readSchema;
  private final List<PkPartition> partitions;
  private final Factory factory;
  private final String name;
  /** The Parquet scans of the files, one per schema version (their size estimates). */
  private final List<Scan> files;

  private LakePkScan(StructType readSchema, List<PkPartition> partitions, Factory factory,
      String name, List<Scan> files) {
    this.readSchema = readSchema;
    this.partitions = partitions;
    this.factory = factory;
    this.name = name;
    this.files = files;
  }

  /**
   * Spark's Parquet scans of the files this scan merges (of the current schema, then one per
   * older schema version): what {@code LakeScan.estimateStatistics} sizes the scan by.
   */
  public List<Scan> fileScans() {
    return files;
  }

  public static LakePkScan create(
      LakeTable table, JsonNode reply, StructType required, CaseInsensitiveStringMap options,
      scala.collection.immutable.Seq<Expression> filters, boolean keepDelete) {
    SparkSession session = SparkSession.active();
    StructType out = required != null ? required : table.schema;
    if (keepDelete) {
      // t$audit_log: each key's newest version whatever its kind, with that kind
      out = LakeAuditScan.prepend(
          new StructField(KIND, ByteType$.MODULE$, true, Metadata.empty()), out);
    }
    List<String> keys = table.trimmedKeys;
    List<StructField> fileFields = new ArrayList<>();
    for (String k : keys) {
      fileFields.add(
          new StructField(KEY_PREFIX + k, table.schema.apply(k).dataType(), true, Metadata.empty()));
    }
    fileFields.add(new StructField(SEQUENCE, LongType$.MODULE$, true, Metadata.empty()));
    fileFields.add(new StructField(KIND, ByteType$.MODULE$, true, Metadata.empty()));
    for (StructField f : table.schema.fields()) {
      fileFields.add(new StructField(f.name(), f.dataType(), true, f.metadata()));
    }
    StructType fileSchema = new StructType(fileFields.toArray(new StructField[0]));
    List<StructField> wanted = new ArrayList<>(fileFields.subList(0, keys.size() + 2));
    java.util.Set<String> wantedNames = new java.util.HashSet<>();
    for (StructField f : out.fields()) {
      if (!f.name().equals(KIND)) {
        wanted.add(fileSchema.apply(f.name()));
        wantedNames.add(f.name());
      }
    }
    JsonNode merge = reply.path(Key.MERGE);
    List<String> seqFields = new ArrayList<>();
    for (JsonNode s : merge.path(Key.SEQUENCE_FIELDS)) {
      seqFields.add(s.asText());
      if (wantedNames.add(s.asText())) { // the versions' order needs them, projected or not
        wanted.add(fileSchema.apply(s.asText()));
      }
    }
    for (JsonNode g : merge.path(Key.SEQUENCE_GROUPS)) {
      for (JsonNode s : g.path(Key.SEQUENCE)) {
        if (wantedNames.add(s.asText())) { // a group's order needs them, projected or not
          wanted.add(fileSchema.apply(s.asText()));
        }
      }
    }
    // partition columns are read from the files (Paimon writes the whole row as the value),
    // so Spark's file index here has no partition schema
    ScanFiles current = ScanFiles.of(reply.path(Key.FILES));
    LakeFileIndex index = LakeFileIndex.of(session, new StructType(), current);
    ParquetScanBuilder parquet =
        new LakeParquetScanBuilder(session, index, fileSchema, fileSchema, options);
    // filters on key columns only (primary key incl. partition columns, whose value columns
    // equal the key in every version) may skip row groups: they drop every version of a key
    // alike, so the merge of what remains is unchanged. Value filters never go in.
    java.util.Set<String> keyColumns = new java.util.HashSet<>(keys);
    keyColumns.addAll(table.partitionKeys);
    List<Expression> keyFilters = new ArrayList<>();
    for (Expression e : CollectionConverters.asJava(FilterPushDown.parquet(filters, reply))) {
      boolean onKeys = e.deterministic() && !e.references().isEmpty();
      for (Attribute a : CollectionConverters.asJava(e.references().toSeq())) {
        onKeys &= keyColumns.contains(a.name());
      }
      if (onKeys) {
        keyFilters.add(e);
      }
    }
    if (!keyFilters.isEmpty()) {
      parquet.pushFilters(CollectionConverters.asScala(keyFilters).toList());
    }
    parquet.pruneColumns(new StructType(wanted.toArray(new StructField[0])));
    Scan scan = parquet.build();
    StructType got = scan.readSchema();
    DataType[] keyTypes = new DataType[keys.size()];
    for (int i = 0; i < keys.size(); i++) {
      if (!got.fields()[i].name().equals(KEY_PREFIX + keys.get(i))) {
        throw Bridge.error("lakeskip: unexpected Parquet read schema " + got.simpleString(), null);
      }
      keyTypes[i] = got.fields()[i].dataType();
    }
    PkMerge rule = PkMerge.of(merge, got, out, keepDelete);
    // files of older schema versions (renamed or widened columns): each version read with its
    // own names and types, no filter pushed, its rows projected onto got by field id
    List<PartitionReaderFactory> versionFactories = new ArrayList<>();
    versionFactories.add(scan.toBatch().createReaderFactory());
    List<List<Expression>> projections = new ArrayList<>();
    projections.add(null);
    List<Scan> fileScans = new ArrayList<>();
    fileScans.add(scan);
    JsonNode evolved = reply.path(Key.EVOLVED);
    List<ScanFiles> byVersion = new ArrayList<>(); // each version's files, read once
    byVersion.add(current);
    byVersion.addAll(LakeScanBuilder.filesOf(evolved));
    for (int v = 1; v < byVersion.size(); v++) {
      JsonNode g = evolved.get(v - 1);
      Scan old = olderVersion(session, table, g, byVersion.get(v), got, options);
      fileScans.add(old);
      versionFactories.add(old.toBatch().createReaderFactory());
      projections.add(projection(old.readSchema(), got, table, g.path(Key.STORED_NAMES)));
    }
    Configuration conf = session.sessionState().newHadoopConf();
    Map<String, List<PartitionedFile>> groups = new LinkedHashMap<>();
    Map<String, Integer> versionOf = new java.util.HashMap<>();
    for (int v = 0; v < byVersion.size(); v++) {
      ScanFiles files = byVersion.get(v);
      for (int i = 0; i < files.size(); i++) {
        Path path = new Path(files.path(i));
        try {
          FileSystem fs = path.getFileSystem(conf);
          path = fs.makeQualified(path);
        } catch (IOException e) {
          throw Bridge.error("lakeskip: cannot resolve " + path + ": " + e.getMessage(), e);
        }
        long size = files.fileSize(i);
        PartitionedFile pf =
            PartitionedFile.apply(
                new GenericInternalRow(0), SparkPath.fromPath(path), 0L, size, new String[0],
                files.mtime(i), size, PartitionedFile.apply$default$8());
        groups.computeIfAbsent(files.group(i), k -> new ArrayList<>()).add(pf);
        if (v > 0) {
          versionOf.put(pf.filePath().urlEncoded(), v);
        }
      }
    }
    List<PkPartition> parts = new ArrayList<>();
    int widest = 1;
    for (List<PartitionedFile> g : groups.values()) {
      parts.add(new PkPartition(g.toArray(new PartitionedFile[0])));
      widest = Math.max(widest, g.size());
    }
    ParquetPartitionReaderFactory[][] readers =
        new ParquetPartitionReaderFactory[versionFactories.size()][];
    for (int v = 0; v < readers.length; v++) {
      readers[v] = fileReaders(versionFactories.get(v), widest);
    }
    return new LakePkScan(out, parts,
        new Factory(readers, projections, versionOf, keyTypes, rule), table.name(), fileScans);
  }

  /**
   * The Parquet scan of the files of one older schema version ({@code g}: its data columns
   * and, per current column, its name there; {@code files}: its files, read from {@code g}),
   * reading the columns of {@code got} those files have under their own names and types:
   * {@code _KEY_} columns under the key's old name.
   */
  private static Scan olderVersion(SparkSession session, LakeTable table, JsonNode g,
      ScanFiles files, StructType got, CaseInsensitiveStringMap options) {
    StructType stored = StructType.fromDDL(g.path(Key.STORED_SCHEMA).asText());
    JsonNode names = g.path(Key.STORED_NAMES);
    List<StructField> fields = new ArrayList<>();
    for (String k : table.trimmedKeys) {
      String was = names.path(k).asText(k);
      fields.add(new StructField(
          KEY_PREFIX + was, stored.apply(was).dataType(), true, Metadata.empty()));
    }
    fields.add(new StructField(SEQUENCE, LongType$.MODULE$, true, Metadata.empty()));
    fields.add(new StructField(KIND, ByteType$.MODULE$, true, Metadata.empty()));
    for (StructField f : stored.fields()) {
      fields.add(new StructField(f.name(), f.dataType(), true, f.metadata()));
    }
    for (StructField p : table.partitionSchema().fields()) {
      fields.add(new StructField(p.name(), p.dataType(), true, p.metadata()));
    }
    StructType fileSchema = new StructType(fields.toArray(new StructField[0]));
    List<StructField> want = new ArrayList<>();
    for (StructField f : got.fields()) {
      String from = storedName(f.name(), table, names);
      if (from != null) {
        want.add(fileSchema.apply(from));
      }
    }
    LakeFileIndex index = LakeFileIndex.of(session, new StructType(), files);
    ParquetScanBuilder parquet =
        new ParquetScanBuilder(session, index, fileSchema, fileSchema, options);
    parquet.pruneColumns(new StructType(want.toArray(new StructField[0])));
    return parquet.build();
  }

  /** The name of {@code got}'s column {@code name} in an older version's files (null: none). */
  private static String storedName(String name, LakeTable table, JsonNode names) {
    if (name.equals(SEQUENCE) || name.equals(KIND) || table.partitionKeys.contains(name)) {
      return name;
    }
    if (name.startsWith(KEY_PREFIX)) {
      String k = name.substring(KEY_PREFIX.length());
      return KEY_PREFIX + names.path(k).asText(k);
    }
    return names.hasNonNull(name) ? names.get(name).asText() : null;
  }

  /** An older version's rows ({@code read}) as {@code got}'s: by name there, widened, NULL. */
  private static List<Expression> projection(
      StructType read, StructType got, LakeTable table, JsonNode names) {
    List<Expression> exprs = new ArrayList<>();
    for (StructField want : got.fields()) {
      String from = storedName(want.name(), table, names);
      exprs.add(LakeEvolvedScan.column(read, from == null ? -1 : read.fieldIndex(from), want));
    }
    return exprs;
  }

  /**
   * {@code n} copies of Spark's Parquet reader factory, for {@code n} files open at once.
   *
   * <p>Why copies: Spark's ParquetPartitionReaderFactory (SPARK-52516, in the 4.3 jars) keeps
   * one {@code ParquetReaderCallback} per factory object, and building a file's reader closes
   * the reader that factory built before (it expects a partition's files to be read one after
   * another). The merge holds every file of a bucket open, so one factory for all of them
   * closed each file under the merge once the next one opened: the row reader failed at the
   * file's next row group ("Stream is closed"), the vectorized reader went on with a fresh,
   * empty batch (rows of zeros and empty strings, no error) and then failed the same way.
   * The copies are made here because a factory cannot be built in a task (its SQLConf does
   * not survive serialisation); they share the conf, schemas, filters and broadcast, which
   * Java serialisation writes once, so each copy adds only its own small fields to the task.
   */
  private static ParquetPartitionReaderFactory[] fileReaders(PartitionReaderFactory f, int n) {
    if (!(f instanceof ParquetPartitionReaderFactory)) {
      throw Bridge.error("lakeskip: unexpected Parquet reader factory " + f.getClass(), null);
    }
    ParquetPartitionReaderFactory p = (ParquetPartitionReaderFactory) f;
    ParquetPartitionReaderFactory[] copies = new ParquetPartitionReaderFactory[n];
    for (int i = 0; i < n; i++) {
      copies[i] =
          p.copy(
              p.sqlConf(), p.broadcastedConf(), p.dataSchema(), p.readDataSchema(),
              p.partitionSchema(), p.filters(), p.aggregation(), p.options());
    }
    return copies;
  }

  @Override
  public StructType readSchema() {
    return readSchema;
  }

  @Override
  public String description() {
    return "LakePkScan " + name + " (merge-on-read, " + partitions.size() + " buckets)";
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    return partitions.toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new ReadErrors(factory, name);
  }

  /** The files of {@code split} if it is one bucket of a merge-on-read scan, else null. */
  public static PartitionedFile[] bucketFiles(InputPartition split) {
    return split instanceof PkPartition ? ((PkPartition) split).files.clone() : null;
  }

  /**
   * A bucket's split of fewer files ({@code files}: some of one {@link #bucketFiles}, in their
   * order). Runtime filters narrow a bucket by dropping files ({@code LakeRuntimeFilter}):
   * Python drops a file only by filters on key columns, which rule out every version of a key
   * alike, so the merge of the rest gives each key it keeps the same row.
   */
  public static InputPartition bucket(PartitionedFile[] files) {
    return new PkPartition(files);
  }

  /** The kept files of one (partition, bucket). */
  static final class PkPartition implements InputPartition {
    final PartitionedFile[] files;

    PkPartition(PartitionedFile[] files) {
      this.files = files;
    }
  }

  static final class Factory implements PartitionReaderFactory {
    /**
     * Per schema version (0: the files read by name), one per file of the widest bucket:
     * file i of a bucket is read by parquet[its version][i].
     */
    final ParquetPartitionReaderFactory[][] parquet;
    /** Per older version (index 0 unused): its rows onto the first version's columns. */
    final List<List<Expression>> projections;
    /** The files of older versions (URL-encoded path) and their version. */
    final Map<String, Integer> versionOf;
    final DataType[] keyTypes;
    /** How the versions of one key become its row (lakeskip.jvm.read.pk.PkMerge). */
    final PkMerge rule;

    Factory(ParquetPartitionReaderFactory[][] parquet, List<List<Expression>> projections,
        Map<String, Integer> versionOf, DataType[] keyTypes, PkMerge rule) {
      this.parquet = parquet;
      this.projections = projections;
      this.versionOf = versionOf;
      this.keyTypes = keyTypes;
      this.rule = rule;
    }

    /** File {@code i} of a bucket, read by its version's reader and mapped onto version 0. */
    PartitionReader<InternalRow> open(PartitionedFile file, int i) {
      int v = versionOf.getOrDefault(file.filePath().urlEncoded(), 0);
      PartitionReader<InternalRow> inner =
          parquet[v][i].createReader(new FilePartition(0, new PartitionedFile[] {file}));
      return v == 0 ? inner : LakeEvolvedScan.projected(inner, projections.get(v));
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      return new MergeReader(this, ((PkPartition) partition).files);
    }
  }

  /** One file's rows, in key order (copied: Spark's readers reuse their row objects). */
  static final class Cursor {
    final PartitionReader<InternalRow> reader;
    InternalRow row;

    Cursor(PartitionReader<InternalRow> reader) {
      this.reader = reader;
    }

    boolean advance() throws IOException {
      if (reader.next()) {
        row = reader.get().copy();
        return true;
      }
      row = null;
      return false;
    }
  }

  static final class MergeReader implements PartitionReader<InternalRow> {
    private final Factory f;
    private final List<Cursor> cursors = new ArrayList<>();
    private final PriorityQueue<Cursor> heap;
    private final BaseOrdering ordering;
    private final List<Cursor> same = new ArrayList<>();
    private InternalRow current;
    private boolean started;

    MergeReader(Factory f, PartitionedFile[] files) {
      this.f = f;
      this.ordering =
          RowOrdering$.MODULE$.createNaturalAscendingOrdering(
              CollectionConverters.asScala(java.util.Arrays.asList(f.keyTypes)).toList());
      Comparator<Cursor> byKey = (a, b) -> ordering.compare(a.row, b.row);
      this.heap = new PriorityQueue<>(Math.max(1, files.length), byKey);
      for (PartitionedFile file : files) { // file i by factory i: see fileReaders
        cursors.add(new Cursor(f.open(file, cursors.size())));
      }
    }

    @Override
    public boolean next() throws IOException {
      if (!started) {
        started = true;
        for (Cursor c : cursors) {
          if (c.advance()) {
            heap.add(c);
          }
        }
      }
      while (!heap.isEmpty()) {
        Cursor c = heap.poll();
        same.clear();
        same.add(c);
        while (!heap.isEmpty() && ordering.compare(heap.peek().row, c.row) == 0) {
          same.add(heap.poll());
        }
        // the versions' rows before the cursors move on (advance() replaces c.row)
        List<InternalRow> versions = new ArrayList<>(same.size());
        for (Cursor d : same) {
          versions.add(d.row);
        }
        for (Cursor d : same) {
          if (d.advance()) {
            heap.add(d);
          }
        }
        InternalRow merged = f.rule.merge(versions);
        if (merged != null) {
          current = merged;
          return true;
        }
      }
      return false;
    }

    @Override
    public InternalRow get() {
      return current;
    }

    @Override
    public void close() throws IOException {
      IOException first = null;
      for (Cursor c : cursors) {
        try {
          c.reader.close();
        } catch (IOException e) {
          if (first == null) {
            first = e;
          }
        }
      }
      if (first != null) {
        throw first;
      }
    }
  }
}
