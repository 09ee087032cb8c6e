package lakeskip.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
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
import org.apache.spark.sql.execution.datasources.parquet.ParquetOptions;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetPartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder;
import org.apache.spark.sql.internal.SQLConf;
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
 * types), the version with the largest {@code _SEQUENCE_NUMBER} wins and {@code -U}/{@code -D}
 * versions are dropped (merge-engine = partial-update: each column's newest non-null value,
 * see {@code partialUpdate}). No value filter is pushed into the files being merged (an older
 * version of a key must never come back because its newer version was filtered out); filters
 * on key columns only may skip row groups. Spark applies every filter after the merge. Python
 * planned which files and buckets to read; this class only reads.
 *
 * <p>Internal Spark API, because the public one cannot do the job: {@code ParquetScanBuilder},
 * {@code PartitionedFile}, {@code FilePartition} (Spark's Parquet reader for one file) and
 * {@code RowOrdering} (Catalyst's ordering of internal rows).
 */
final class LakePkScan implements Scan, Batch {
  static final String SEQUENCE = "_SEQUENCE_NUMBER";
  static final String KIND = "_VALUE_KIND";
  static final String KEY_PREFIX = "_KEY_";

  private final StructType readSchema;
  private final List<PkPartition> partitions;
  private final Factory factory;
  private final String name;

  private LakePkScan(
      StructType readSchema, List<PkPartition> partitions, Factory factory, String name) {
    this.readSchema = readSchema;
    this.partitions = partitions;
    this.factory = factory;
    this.name = name;
  }

  static LakePkScan create(
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
    for (StructField f : out.fields()) {
      if (!f.name().equals(KIND)) {
        wanted.add(fileSchema.apply(f.name()));
      }
    }
    // partition columns are read from the files (Paimon writes the whole row as the value),
    // so Spark's file index here has no partition schema
    LakeFileIndex index = LakeFileIndex.of(session, new StructType(), reply.path("files"));
    ParquetScanBuilder parquet =
        new ParquetScanBuilder(session, index, fileSchema, fileSchema, options);
    // filters on key columns only (primary key incl. partition columns, whose value columns
    // equal the key in every version) may skip row groups: they drop every version of a key
    // alike, so the merge of what remains is unchanged. Value filters never go in.
    java.util.Set<String> keyColumns = new java.util.HashSet<>(keys);
    keyColumns.addAll(table.partitionKeys);
    List<Expression> keyFilters = new ArrayList<>();
    for (Expression e : CollectionConverters.asJava(LakeScanBuilder.pushable(filters, reply))) {
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
    int[] outOrdinals = new int[out.fields().length];
    DataType[] outTypes = new DataType[outOrdinals.length];
    for (int i = 0; i < outOrdinals.length; i++) {
      outOrdinals[i] = got.fieldIndex(out.fields()[i].name());
      outTypes[i] = out.fields()[i].dataType();
    }
    JsonNode merge = reply.path("merge");
    Factory factory =
        new Factory(
            rowReaderFactory(scan.toBatch().createReaderFactory()), keyTypes,
            got.fieldIndex(SEQUENCE),
            got.fieldIndex(KIND), outOrdinals, outTypes,
            "partial-update".equals(merge.path("engine").asText("deduplicate")),
            merge.path("ignore_delete").asBoolean(false),
            merge.path("remove_record_on_delete").asBoolean(false),
            keepDelete);
    Configuration conf = session.sessionState().newHadoopConf();
    Map<String, List<PartitionedFile>> groups = new LinkedHashMap<>();
    for (JsonNode f : reply.path("files")) {
      Path path = new Path(f.get("path").asText());
      try {
        FileSystem fs = path.getFileSystem(conf);
        path = fs.makeQualified(path);
      } catch (IOException e) {
        throw Bridge.error("lakeskip: cannot resolve " + path + ": " + e.getMessage(), e);
      }
      long size = f.get("size").asLong();
      PartitionedFile pf =
          PartitionedFile.apply(
              new GenericInternalRow(0), SparkPath.fromPath(path), 0L, size, new String[0],
              f.path("mtime").asLong(0), size, PartitionedFile.apply$default$8());
      groups.computeIfAbsent(f.get("group").asText(), g -> new ArrayList<>()).add(pf);
    }
    List<PkPartition> parts = new ArrayList<>();
    for (List<PartitionedFile> g : groups.values()) {
      parts.add(new PkPartition(g.toArray(new PartitionedFile[0])));
    }
    return new LakePkScan(out, parts, factory, table.name());
  }

  /**
   * The same Parquet reader factory with the vectorized reader off: the merge holds copied
   * rows of several open files at once, and with the vectorized reader some of those rows
   * read back as zeros (seen on Spark 4.3; cause not pinned down, the row reader is exact).
   */
  private static PartitionReaderFactory rowReaderFactory(PartitionReaderFactory f) {
    if (!(f instanceof ParquetPartitionReaderFactory)) {
      throw Bridge.error("lakeskip: unexpected Parquet reader factory " + f.getClass(), null);
    }
    ParquetPartitionReaderFactory p = (ParquetPartitionReaderFactory) f;
    SQLConf conf = p.sqlConf().clone();
    conf.setConfString("spark.sql.parquet.enableVectorizedReader", "false");
    return ParquetPartitionReaderFactory.apply(
        conf, p.broadcastedConf(), p.dataSchema(), p.readDataSchema(), p.partitionSchema(),
        p.filters(), p.aggregation(), (ParquetOptions) p.options());
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

  /** The kept files of one (partition, bucket). */
  static final class PkPartition implements InputPartition {
    final PartitionedFile[] files;

    PkPartition(PartitionedFile[] files) {
      this.files = files;
    }
  }

  static final class Factory implements PartitionReaderFactory {
    final PartitionReaderFactory parquet;
    final DataType[] keyTypes;
    final int sequence;
    final int kind;
    final int[] out;
    final DataType[] outTypes;
    /** merge-engine = partial-update (else deduplicate) and its delete handling. */
    final boolean partialUpdate;
    final boolean ignoreDelete;
    final boolean removeRecordOnDelete;
    /** Keep {@code -U}/{@code -D} winners (Paimon's forceKeepDelete: t$audit_log). */
    final boolean keepDelete;

    Factory(
        PartitionReaderFactory parquet, DataType[] keyTypes, int sequence, int kind, int[] out,
        DataType[] outTypes, boolean partialUpdate, boolean ignoreDelete,
        boolean removeRecordOnDelete, boolean keepDelete) {
      this.keepDelete = keepDelete;
      this.parquet = parquet;
      this.keyTypes = keyTypes;
      this.sequence = sequence;
      this.kind = kind;
      this.out = out;
      this.outTypes = outTypes;
      this.partialUpdate = partialUpdate;
      this.ignoreDelete = ignoreDelete;
      this.removeRecordOnDelete = removeRecordOnDelete;
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
      for (PartitionedFile file : files) {
        cursors.add(
            new Cursor(f.parquet.createReader(new FilePartition(0, new PartitionedFile[] {file}))));
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
        InternalRow best = c.row;
        same.clear();
        same.add(c);
        while (!heap.isEmpty() && ordering.compare(heap.peek().row, c.row) == 0) {
          Cursor d = heap.poll();
          same.add(d);
          if (d.row.getLong(f.sequence) > best.getLong(f.sequence)) {
            best = d.row;
          }
        }
        if (f.partialUpdate) {
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
          InternalRow merged = partialUpdate(versions);
          if (merged != null) {
            current = merged;
            return true;
          }
          continue;
        }
        for (Cursor d : same) {
          if (d.advance()) {
            heap.add(d);
          }
        }
        byte kind = best.getByte(f.kind);
        if (kind == 0 || kind == 2 || f.keepDelete) { // +I, +U: the key's row; -U, -D: none
          Object[] values = new Object[f.out.length];
          for (int i = 0; i < values.length; i++) {
            values[i] = best.isNullAt(f.out[i]) ? null : best.get(f.out[i], f.outTypes[i]);
          }
          current = new GenericInternalRow(values);
          return true;
        }
      }
      return false;
    }

    /**
     * Paimon's {@code PartialUpdateMergeFunction} without sequence groups or aggregation
     * (lakeskip.catalog.pk.merge_engine has the same rules in Python): versions oldest first;
     * +I/+U set their non-null columns; a retract version first seeds the row with its values;
     * a -D resets the row to its values when remove-record-on-delete (and, newest, means no
     * row); retracts are skipped with ignore-delete and are an error otherwise. Null: no row.
     */
    private InternalRow partialUpdate(List<InternalRow> versions) throws IOException {
      versions.sort((a, b) -> Long.compare(a.getLong(f.sequence), b.getLong(f.sequence)));
      Object[] values = new Object[f.out.length];
      boolean filled = false;
      boolean meetInsert = false;
      boolean deleted = false;
      for (InternalRow v : versions) {
        byte kind = v.getByte(f.kind);
        deleted = false;
        if (kind == 1 || kind == 3) {
          if (!filled) {
            copyAll(v, values);
            filled = true;
          }
          if (f.ignoreDelete) {
            continue;
          }
          if (f.removeRecordOnDelete) {
            if (kind == 3) {
              deleted = true;
              copyAll(v, values);
            }
            continue;
          }
          throw new IOException(
              "lakeskip: a partial-update table holds -U/-D versions but neither "
                  + "'ignore-delete' nor 'partial-update.remove-record-on-delete' is set");
        }
        for (int i = 0; i < values.length; i++) {
          if (!v.isNullAt(f.out[i])) {
            values[i] = v.get(f.out[i], f.outTypes[i]);
          }
        }
        meetInsert = true;
        filled = true;
      }
      return deleted || !meetInsert ? null : new GenericInternalRow(values);
    }

    private void copyAll(InternalRow v, Object[] values) {
      for (int i = 0; i < values.length; i++) {
        values[i] = v.isNullAt(f.out[i]) ? null : v.get(f.out[i], f.outTypes[i]);
      }
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
