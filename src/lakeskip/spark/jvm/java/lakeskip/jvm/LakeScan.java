package lakeskip.jvm;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
import org.apache.spark.sql.execution.datasources.v2.FileScan;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScan;
import org.apache.spark.sql.internal.connector.SupportsMetadata;
import org.apache.spark.sql.types.StructType;

/**
 * Spark's scan of the kept files, planned once per query.
 *
 * <p>Why it exists: {@code BatchScanExec} keeps its reader factory and input partitions in lazy
 * fields of the node, and physical planning copies the node (the strategy asks
 * {@code supportsColumnar}, then {@code RemoveRedundantProjects} asks again on a copy), so a bare
 * {@code ParquetScan} builds its reader factory at least twice per query, and every build
 * broadcasts the whole Hadoop configuration (serialised and gzipped): measured as the largest
 * JVM-side cost of planning a catalog query, where plain {@code spark.read.parquet} (V1) pays
 * one broadcast. Here every copy shares one factory and one list of splits, and a query that
 * needs the same factory as an earlier one (same schemas, pushed filters, options and
 * configuration) reuses it ({@link ReaderFactories}): no broadcast at all.
 *
 * <p>Everything else is the inner scan's: read schema, EXPLAIN text and metadata
 * ({@code PushedFilters}, {@code Location}), statistics (broadcast-join decisions), equality.
 */
public final class LakeScan implements Scan, Batch, SupportsReportStatistics, SupportsMetadata {
  private final Scan inner;
  private final String table;
  private PartitionReaderFactory factory;
  private InputPartition[] partitions;

  LakeScan(Scan inner, String table) {
    this.inner = inner;
    this.table = table;
  }

  /** The wrapped scan ({@code lakeskip.spark.input_files} reads its file index). */
  public Scan inner() {
    return inner;
  }

  /** The kept files' index, or null when the inner scan is not a file scan. */
  public PartitioningAwareFileIndex fileIndex() {
    Scan files = inner instanceof LakeDvScan ? ((LakeDvScan) inner).inner() : inner;
    return files instanceof FileScan ? ((FileScan) files).fileIndex() : null;
  }

  @Override
  public StructType readSchema() {
    return inner.readSchema();
  }

  @Override
  public String description() {
    return inner.description();
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public synchronized InputPartition[] planInputPartitions() {
    if (partitions == null) {
      partitions = inner.toBatch().planInputPartitions();
    }
    return partitions;
  }

  @Override
  public synchronized PartitionReaderFactory createReaderFactory() {
    if (factory == null) {
      factory =
          new ReadErrors(
              inner instanceof ParquetScan
                  ? ReaderFactories.of((ParquetScan) inner)
                  : inner.toBatch().createReaderFactory(),
              table);
    }
    return factory;
  }

  @Override
  public ColumnarSupportMode columnarSupportMode() {
    return inner.columnarSupportMode();
  }

  @Override
  public CustomMetric[] supportedCustomMetrics() {
    return inner.supportedCustomMetrics();
  }

  @Override
  public CustomTaskMetric[] reportDriverMetrics() {
    return inner.reportDriverMetrics();
  }

  @Override
  public Statistics estimateStatistics() {
    if (inner instanceof SupportsReportStatistics) {
      return ((SupportsReportStatistics) inner).estimateStatistics();
    }
    return new Statistics() {
      @Override
      public java.util.OptionalLong sizeInBytes() {
        return java.util.OptionalLong.empty();
      }

      @Override
      public java.util.OptionalLong numRows() {
        return java.util.OptionalLong.empty();
      }
    };
  }

  @Override
  public scala.collection.immutable.Map<String, String> getMetaData() {
    if (inner instanceof SupportsMetadata) {
      return ((SupportsMetadata) inner).getMetaData();
    }
    return scala.collection.immutable.Map$.MODULE$.<String, String>empty();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof LakeScan && inner.equals(((LakeScan) o).inner);
  }

  @Override
  public int hashCode() {
    return inner.hashCode();
  }

  @Override
  public String toString() {
    return inner.toString();
  }
}
