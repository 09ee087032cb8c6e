package lakeskip.jvm.read;

import java.util.ArrayList;
import java.util.List;
import lakeskip.jvm.cache.ReaderFactories;
import lakeskip.jvm.read.pk.LakeDvScan;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A scan over an inner scan's partitions that rewrites its rows: {@link LakeDvScan} drops the
 * rows of deletion vectors, {@link LakeAuditScan} puts Paimon's {@code rowkind} first. Reads
 * rows (its factory's {@code supportColumnarReads} stays false): Spark requires one mode for
 * all partitions of a scan.
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
}
