package lakeskip.jvm.read.stream;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * One split of a micro-batch, with the reader factory of its batch's scan: a streaming scan
 * has one reader factory for all its batches ({@code MicroBatchStream.createReaderFactory}),
 * but each batch's files are read by a scan of their own (its pushed filters, deletion
 * vectors). The batch scan's columns come in its own order (a partitioned table's partition
 * columns last); {@link #src} puts them in the table's, the stream's output.
 */
final class StreamPartition implements InputPartition {
  private static final long serialVersionUID = 1L;
  private final InputPartition inner;
  private final PartitionReaderFactory factory;
  private final StructType read;
  /** For each table column, its position in {@link #read}; null: the same order. */
  private final int[] src;

  StreamPartition(InputPartition inner, PartitionReaderFactory factory, StructType read, int[] src) {
    this.inner = inner;
    this.factory = factory;
    this.read = read;
    this.src = src;
  }

  /** Each column of {@code out} in {@code read}, or null when they are in the same order. */
  static int[] sources(StructType read, StructType out) {
    int[] src = new int[out.fields().length];
    boolean same = read.fields().length == src.length;
    for (int j = 0; j < src.length; j++) {
      src[j] = read.fieldIndex(out.fields()[j].name());
      same &= src[j] == j;
    }
    return same ? null : src;
  }

  @Override
  public String[] preferredLocations() {
    return inner.preferredLocations();
  }

  /** The stream's reader factory: each split's own, its columns in the table's order. */
  static final class Factory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      StreamPartition p = (StreamPartition) partition;
      PartitionReader<InternalRow> reader = p.factory.createReader(p.inner);
      if (p.src == null) {
        return reader;
      }
      List<Expression> exprs = new ArrayList<>();
      for (int i : p.src) {
        StructField f = p.read.fields()[i];
        exprs.add(new BoundReference(i, f.dataType(), f.nullable()));
      }
      UnsafeProjection projection =
          UnsafeProjection.create(scala.jdk.javaapi.CollectionConverters.asScala(exprs).toSeq());
      return new PartitionReader<InternalRow>() {
        @Override
        public boolean next() throws IOException {
          return reader.next();
        }

        @Override
        public InternalRow get() {
          return projection.apply(reader.get());
        }

        @Override
        public void close() throws IOException {
          reader.close();
        }
      };
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
      StreamPartition p = (StreamPartition) partition;
      PartitionReader<ColumnarBatch> reader = p.factory.createColumnarReader(p.inner);
      if (p.src == null) {
        return reader;
      }
      return new PartitionReader<ColumnarBatch>() {
        @Override
        public boolean next() throws IOException {
          return reader.next();
        }

        @Override
        public ColumnarBatch get() {
          ColumnarBatch b = reader.get();
          ColumnVector[] columns = new ColumnVector[p.src.length];
          for (int j = 0; j < columns.length; j++) {
            columns[j] = b.column(p.src[j]);
          }
          return new ColumnarBatch(columns, b.numRows());
        }

        @Override
        public void close() throws IOException {
          reader.close();
        }
      };
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      StreamPartition p = (StreamPartition) partition;
      return p.factory.supportColumnarReads(p.inner);
    }
  }
}
