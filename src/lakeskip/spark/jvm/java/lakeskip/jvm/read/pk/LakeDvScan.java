package lakeskip.jvm.read.pk;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import lakeskip.jvm.read.LakeScan;
import lakeskip.jvm.read.RowRewriteScan;
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
import org.roaringbitmap.RoaringBitmap;

/**
 * Spark's ParquetScan over files of which some have deletion vectors: the inner scan also
 * reads Spark's Parquet row index ({@code _tmp_metadata_row_index}, the column behind
 * {@code _metadata.row_index}: exact under row-group skipping and file splits), and the reader
 * drops the rows whose position is in their file's DV, then projects the index column away.
 *
 * <p>Java stays a reader: Python planned the files and read and checked the DVs (a corrupt DV
 * fails the plan); they arrive here as portable RoaringBitmap bytes per data file name. Scans
 * without any DV keep the plain ParquetScan (columnar). This one reads rows: Spark requires
 * one mode for all partitions of a scan.
 *
 * <p>Reusable for primary-key tables in DV mode (read level &gt; 0 files, apply DVs, no merge):
 * any {@code Scan} whose partitions are {@link FilePartition}s and whose output carries the
 * row-index column can be wrapped.
 */
public final class LakeDvScan extends RowRewriteScan {
  public static final String ROW_INDEX =
      org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat$.MODULE$
          .ROW_INDEX_TEMPORARY_COLUMN_NAME();

  private final Map<String, byte[]> vectors;
  private final int rowIndex;

  /** Over {@code inner}, a scan of the files (their index: {@code LakeScan.fileIndex}). */
  public LakeDvScan(Scan inner, Map<String, byte[]> vectors) {
    super(inner, withoutRowIndex(inner.readSchema()));
    this.vectors = vectors;
    this.rowIndex = inner.readSchema().fieldIndex(ROW_INDEX);
  }

  private static StructType withoutRowIndex(StructType full) {
    return new StructType(without(full, full.fieldIndex(ROW_INDEX)).toArray(new StructField[0]));
  }

  @Override
  public String description() {
    return inner.description() + " DeletionVectors: " + vectors.size() + " file(s)";
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new Factory(innerFactory(), vectors, inner.readSchema(), rowIndex);
  }

  static final class Factory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final PartitionReaderFactory inner;
    private final Map<String, byte[]> vectors;
    private final StructType full;
    private final int rowIndex;

    Factory(PartitionReaderFactory inner, Map<String, byte[]> vectors, StructType full, int rowIndex) {
      this.inner = inner;
      this.vectors = new java.util.HashMap<>(vectors);
      this.full = full;
      this.rowIndex = rowIndex;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      // the row-index column is projected away
      return new Reader(inner, (FilePartition) partition, vectors, rowIndex,
          projectionWithout(full, rowIndex));
    }
  }

  /** The files of one partition in turn, each through the inner reader, minus DV rows. */
  static final class Reader extends FileByFileReader {
    private final Map<String, byte[]> vectors;
    private final int rowIndex;
    private RoaringBitmap deleted;

    Reader(PartitionReaderFactory factory, FilePartition partition, Map<String, byte[]> vectors,
        int rowIndex, UnsafeProjection projection) {
      super(factory, partition, projection);
      this.vectors = vectors;
      this.rowIndex = rowIndex;
    }

    @Override
    protected void open(PartitionedFile file) throws IOException {
      byte[] bytes = vectors.get(file.toPath().getName());
      deleted = null;
      if (bytes != null) {
        deleted = new RoaringBitmap();
        deleted.deserialize(ByteBuffer.wrap(bytes));
      }
    }

    @Override
    protected boolean keep(InternalRow r) throws IOException {
      if (deleted == null) {
        return true;
      }
      if (r.isNullAt(rowIndex)) {
        throw new IOException("lakeskip: Parquet row index missing while applying a deletion vector");
      }
      long pos = r.getLong(rowIndex);
      if (pos > Integer.MAX_VALUE || pos < 0) {
        throw new IOException("lakeskip: row position " + pos + " beyond a 32-bit deletion vector");
      }
      return !deleted.contains((int) pos);
    }
  }
}
