package lakeskip.jvm.read;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Spark's {@code ParquetScanBuilder}, but filters on TIMESTAMP columns reach the Parquet reader.
 *
 * <p>Spark's V2 builder keeps a data filter only where {@code ParquetFilters} could convert it
 * against the Parquet schema Spark would <em>write</em> for the table's columns, and Spark
 * writes TIMESTAMP as INT96 by default ({@code spark.sql.parquet.outputTimestampType}), which
 * Parquet filters do not support: so {@code ts >= x} never reached the reader, which read every
 * row group and page of a kept file (its {@code PushedFilters} was empty), where plain {@code
 * spark.read.parquet} (V1: filters converted against each file's own footer) skips the row
 * groups and pages that Parquet's statistics and page index rule out. Lakeskip's files keep
 * TIMESTAMP as INT64 microseconds. Here the filters the builder dropped whose every column is a
 * TIMESTAMP column are kept as well: the reader converts each pushed filter against the file's
 * own footer and drops one it cannot convert (an INT96 file's), and Spark still applies every
 * filter to the rows read, so a pushed filter only ever skips rows that fail it.
 */
public final class LakeParquetScanBuilder extends ParquetScanBuilder {
  private final Set<String> timestamps = new HashSet<>();

  public LakeParquetScanBuilder(SparkSession session, PartitioningAwareFileIndex index,
      StructType schema, StructType dataSchema, CaseInsensitiveStringMap options) {
    super(session, index, schema, dataSchema, options);
    for (StructField f : dataSchema.fields()) {
      if (f.dataType() instanceof TimestampType) {
        timestamps.add(f.name());
      }
    }
  }

  @Override
  public Filter[] pushDataFilters(Filter[] filters) {
    Filter[] pushed = super.pushDataFilters(filters);
    if (timestamps.isEmpty() || pushed.length == filters.length
        || !sparkSession().sessionState().conf().parquetFilterPushDown()
        || !sparkSession().sessionState().conf().parquetFilterPushDownTimestamp()) {
      return pushed;
    }
    Set<Filter> out = new LinkedHashSet<>(List.of(pushed));
    for (Filter f : filters) {
      String[] refs = f.references();
      boolean onTimestamps = refs.length > 0;
      for (String r : refs) {
        onTimestamps &= timestamps.contains(r);
      }
      if (onTimestamps) {
        out.add(f);
      }
    }
    return new ArrayList<>(out).toArray(new Filter[0]);
  }
}
