package lakeskip.jvm.read;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import lakeskip.jvm.cache.ReaderFactories;
import lakeskip.jvm.read.pk.LakeDvScan;
import lakeskip.jvm.read.stream.LakeChangeScan;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.datasources.FilePartition;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A scan over an inner scan's partitions that rewrites its rows: {@link LakeDvScan} drops the
 * rows of deletion vectors, {@link LakeChangeScan} keeps a stream's new row versions, {@link
 * LakeAuditScan} puts Paimon's {@code rowkind} first. Reads rows (its factory's {@code
 * supportColumnarReads} stays false): Spark requires one mode for all partitions of a scan.
 * The first two filter each file's rows by what Python sent for that file: {@link
 * FileByFileReader} is their shared reader loop.
 */
public abstract class RowRewriteScan implements Scan, Batch {
  protected final Scan inner;
  private final StructType readSchema;

  protected RowRewriteScan(Scan inner, StructType readSchema) {
    this.inner = inner;
    this.readSchema = readSchema;
  }

  /** The wrapped scan. */
  protected Scan inner() {
    return inner;
  }

  @Override
  public StructType readSchema() {
    return readSchema;
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    return inner.toBatch().planInputPartitions();
  }

  /** The inner scan's reader factory ({@link ReaderFactories#of(Scan)}). */
  protected final PartitionReaderFactory innerFactory() {
    return ReaderFactories.of(inner);
  }

  /** The fields of {@code full} but the one at {@code skip} (-1: all of them). */
  protected static List<StructField> without(StructType full, int skip) {
    List<StructField> out = new ArrayList<>();
    for (int i = 0; i < full.fields().length; i++) {
      if (i != skip) {
        out.add(full.fields()[i]);
      }
    }
    return out;
  }

  /** A projection of {@code full}'s columns but those at {@code skip}, in order. */
  protected static UnsafeProjection projectionWithout(StructType full, int... skip) {
    List<Expression> exprs = new ArrayList<>();
    for (int i = 0; i < full.fields().length; i++) {
      final int at = i;
      if (Arrays.stream(skip).noneMatch(s -> s == at)) {
        StructField f = full.fields()[i];
        exprs.add(new BoundReference(i, f.dataType(), f.nullable()));
      }
    }
    return UnsafeProjection.create(scala.jdk.javaapi.CollectionConverters.asScala(exprs).toSeq());
  }

  /**
   * The files of one {@link FilePartition} in turn, each through the inner scan's reader on a
   * partition of that file alone (so a subclass knows which file a row comes from), keeping
   * the rows {@link #keep} accepts, projected by the projection given.
   */
  public abstract static class FileByFileReader implements PartitionReader<InternalRow> {
    private final PartitionReaderFactory factory;
    private final FilePartition partition;
    private final UnsafeProjection projection;
    private int next;
    private PartitionReader<InternalRow> current;
    private InternalRow row;

    protected FileByFileReader(PartitionReaderFactory factory, FilePartition partition,
        UnsafeProjection projection) {
      this.factory = factory;
      this.partition = partition;
      this.projection = projection;
    }

    /** Called as {@code file} opens, before its first row. */
    protected abstract void open(PartitionedFile file) throws IOException;

    /** Whether the open file's row {@code r} (the inner scan's columns) is read. */
    protected abstract boolean keep(InternalRow r) throws IOException;

    private boolean openNext() throws IOException {
      PartitionedFile[] files = partition.files();
      if (next >= files.length) {
        return false;
      }
      PartitionedFile file = files[next++];
      current =
          factory.createReader(new FilePartition(partition.index(), new PartitionedFile[] {file}));
      open(file);
      return true;
    }

    @Override
    public final boolean next() throws IOException {
      while (true) {
        if (current == null && !openNext()) {
          return false;
        }
        while (current.next()) {
          InternalRow r = current.get();
          if (keep(r)) {
            row = projection.apply(r);
            return true;
          }
        }
        current.close();
        current = null;
      }
    }

    @Override
    public final InternalRow get() {
      return row;
    }

    @Override
    public final void close() throws IOException {
      if (current != null) {
        current.close();
        current = null;
      }
    }
  }
}
