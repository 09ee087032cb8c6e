package lakeskip.jvm.read.stream;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import lakeskip.jvm.read.RowRewriteScan;
import lakeskip.jvm.read.pk.LakePkScan;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.datasources.FilePartition;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A micro-batch of a primary-key table's stream: the files a snapshot wrote, read as written
 * (no merge, no deletion vector), keeping the row versions it wrote ({@code
 * lakeskip.planner.stream.changed_files}): rows of kind {@code +I} / {@code +U} only (no
 * retractions), and in a file that also holds rows a merge copied from older files, only the
 * rows numbered from its first new sequence number. The inner Parquet scan reads {@code
 * _SEQUENCE_NUMBER} and {@code _VALUE_KIND} beside the table's columns; both are projected
 * away. Java stays a reader: Python chose the files and the numbers.
 */
public final class LakeChangeScan extends RowRewriteScan {
  public static final String SEQUENCE = "_SEQUENCE_NUMBER";
  /** {@code _VALUE_KIND} of an update's old value and of a delete. */
  private static final byte UPDATE_BEFORE = 1;
  private static final byte DELETE = 3;

  private final Map<String, Long> since;
  private final int seq;
  private final int kind;

  /** Over {@code inner}, whose rows carry {@link #SEQUENCE} and {@code _VALUE_KIND}. */
  public LakeChangeScan(Scan inner, Map<String, Long> since) {
    super(inner, tableColumns(inner.readSchema()));
    this.since = new HashMap<>(since);
    this.seq = inner.readSchema().fieldIndex(SEQUENCE);
    this.kind = inner.readSchema().fieldIndex(LakePkScan.KIND);
  }

  private static StructType tableColumns(StructType full) {
    List<StructField> out = new ArrayList<>();
    for (StructField f : full.fields()) {
      if (!f.name().equals(SEQUENCE) && !f.name().equals(LakePkScan.KIND)) {
        out.add(f);
      }
    }
    return new StructType(out.toArray(new StructField[0]));
  }

  @Override
  public String description() {
    return inner.description() + " Changes: +I/+U rows, " + since.size() + " file(s) from a sequence number";
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new Factory(innerFactory(), since, inner.readSchema(), seq, kind);
  }

  static final class Factory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final PartitionReaderFactory inner;
    private final HashMap<String, Long> since;
    private final StructType full;
    private final int seq;
    private final int kind;

    Factory(PartitionReaderFactory inner, Map<String, Long> since, StructType full, int seq,
        int kind) {
      this.inner = inner;
      this.since = new HashMap<>(since);
      this.full = full;
      this.seq = seq;
      this.kind = kind;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      return new Reader(inner, (FilePartition) partition, since, seq, kind,
          projectionWithout(full, seq, kind));
    }
  }

  /** The files of one partition in turn, each through the inner reader, new versions only. */
  static final class Reader extends FileByFileReader {
    private final Map<String, Long> since;
    private final int seq;
    private final int kind;
    /** The current file's first new sequence number (Long.MIN_VALUE: every row is new). */
    private long from;

    Reader(PartitionReaderFactory factory, FilePartition partition, Map<String, Long> since,
        int seq, int kind, UnsafeProjection projection) {
      super(factory, partition, projection);
      this.since = since;
      this.seq = seq;
      this.kind = kind;
    }

    @Override
    protected void open(PartitionedFile file) {
      Long first = since.get(file.toPath().getName());
      from = first == null ? Long.MIN_VALUE : first;
    }

    @Override
    protected boolean keep(InternalRow r) throws IOException {
      if (r.isNullAt(kind) || r.isNullAt(seq)) {
        throw new IOException("lakeskip: a primary-key data file without "
            + LakePkScan.KIND + " / " + SEQUENCE);
      }
      byte k = r.getByte(kind);
      return k != UPDATE_BEFORE && k != DELETE && r.getLong(seq) >= from;
    }
  }
}
