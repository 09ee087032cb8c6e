package lakeskip.jvm.cache;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScan;
import org.apache.spark.sql.sources.Filter;

/**
 * Reader factories of Spark's ParquetScan, shared between queries that would build the same one.
 *
 * <p>Why: every {@code ParquetScan.createReaderFactory} serialises, compresses and broadcasts
 * the whole Hadoop configuration (over a thousand entries): measured as the largest driver cost
 * of planning a catalog query, paid again by every repetition of a query. The factory holds
 * nothing about which files are read (splits come from the scan, per query); it is a function
 * of the read schemas, the pushed Parquet filters, the options and the configuration, all of
 * which are in the key with exact equality. The session's SQL settings and the scan's Hadoop
 * configuration are compared entry by entry, so a changed setting (credentials, reader options,
 * time zone) builds a new factory; a setting of printed output only does not ({@link
 * SessionKey#settings}). Bounded: an evicted factory's broadcast is released by
 * Spark's ContextCleaner once no plan holds it.
 */
public final class ReaderFactories {
  private static final Lru<SessionKey, PartitionReaderFactory> CACHE = new Lru<>(16);

  private ReaderFactories() {}

  /** A scan's reader factory: a ParquetScan's through {@link #of(ParquetScan)}. */
  public static PartitionReaderFactory of(Scan scan) {
    return scan instanceof ParquetScan
        ? of((ParquetScan) scan)
        : scan.toBatch().createReaderFactory();
  }

  /** The scan's reader factory: a cached one when an identical factory was built before. */
  static PartitionReaderFactory of(ParquetScan scan) {
    if (scan.pushedAggregate().isDefined() || scan.pushedVariantExtractions().length > 0) {
      return scan.createReaderFactory(); // not built by lakeskip's scan builder: not keyed
    }
    // the key is taken before createReaderFactory, which writes into the scan's Hadoop conf
    SessionKey key = key(scan);
    PartitionReaderFactory hit = CACHE.get(key);
    if (hit != null) {
      return hit;
    }
    PartitionReaderFactory built = scan.createReaderFactory();
    CACHE.put(key, built);
    return built;
  }

  /** Forget every factory (tests; a stopped SparkContext's broadcasts are unusable). */
  static void clear() {
    CACHE.clear();
  }

  /**
   * Everything a factory is built from: the read schemas, the pushed filters (as values and
   * as text), the options, the session's SQL settings and the scan's Hadoop settings.
   */
  private static SessionKey key(ParquetScan scan) {
    SparkSession session = scan.sparkSession();
    Filter[] pushed = scan.pushedFilters();
    Map<String, String> hadoopConf = new HashMap<>();
    for (Iterator<Map.Entry<String, String>> it = scan.hadoopConf().iterator(); it.hasNext(); ) {
      Map.Entry<String, String> e = it.next();
      hadoopConf.put(e.getKey(), e.getValue());
    }
    return new SessionKey(
        session,
        scan.dataSchema().json(),
        scan.readDataSchema().json(),
        scan.readPartitionSchema().json(),
        Arrays.asList(pushed.clone()),
        Arrays.toString(pushed),
        new HashMap<>(scan.options().asCaseSensitiveMap()),
        SessionKey.settings(session),
        SessionKey.settings(hadoopConf));
  }
}
