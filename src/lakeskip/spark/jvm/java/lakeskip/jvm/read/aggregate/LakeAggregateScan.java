package lakeskip.jvm.read.aggregate;

import java.io.Serializable;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;

/**
 * The answer of a pushed aggregate ({@link AggregatePushDown}): the one final row, computed
 * from the manifests. No data file is read. A {@link LocalScan}, so Spark plans it as a local
 * table scan; with lakeskip's strategy installed, {@link LakeAggregateExec} also evaluates the
 * projection above it on the driver, and the query runs no Spark job. EXPLAIN shows
 * {@code PushedAggregation: [...]} in this scan's description.
 */
public final class LakeAggregateScan implements LocalScan, Batch {
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
  public InternalRow[] rows() {
    InternalRow[] out = new InternalRow[rows.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = new GenericInternalRow(rows.get(i).clone());
    }
    return out;
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
