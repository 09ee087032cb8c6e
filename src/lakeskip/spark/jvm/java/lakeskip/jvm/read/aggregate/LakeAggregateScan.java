package lakeskip.jvm.read.aggregate;

import java.io.Serializable;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;

/**
 * The answer of a pushed aggregate ({@link AggregatePushDown}): one partial row
 * per partition the query's filters keep, computed by Python from the manifests; Spark's
 * final aggregate combines them (sums the counts, takes the min of the mins). No data file is
 * read. EXPLAIN shows {@code PushedAggregation: [...]} in this scan's description.
 */
final class LakeAggregateScan implements Scan, Batch {
  private final StructType schema;
  private final List<Object[]> rows;
  private final String description;

  LakeAggregateScan(StructType schema, List<Object[]> rows, String description) {
    this.schema = schema;
    this.rows = rows;
    this.description = description;
  }

  @Override
  public StructType readSchema() {
    return schema;
  }

  @Override
  public String description() {
    return description;
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    return new InputPartition[] {new Rows(rows.toArray(new Object[0][]))};
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new Factory();
  }

  /** The partial rows, in Catalyst's internal form (Long, Integer, Decimal, ...). */
  private static final class Rows implements InputPartition, Serializable {
    private static final long serialVersionUID = 1L;
    final Object[][] rows;

    Rows(Object[][] rows) {
      this.rows = rows;
    }
  }

  private static final class Factory implements PartitionReaderFactory, Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      Object[][] rows = ((Rows) partition).rows;
      return new PartitionReader<InternalRow>() {
        private int next = -1;

        @Override
        public boolean next() {
          return ++next < rows.length;
        }

        @Override
        public InternalRow get() {
          return new GenericInternalRow(rows[next].clone());
        }

        @Override
        public void close() {}
      };
    }
  }
}
