package lakeskip.jvm;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
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
 * time zone) builds a new factory. Bounded: an evicted factory's broadcast is released by
 * Spark's ContextCleaner once no plan holds it.
 */
final class ReaderFactories {
  private static final int MAX = 16;
  private static final Map<Key, PartitionReaderFactory> CACHE =
      new LinkedHashMap<>(MAX, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Key, PartitionReaderFactory> e) {
          return size() > MAX;
        }
      };

  private ReaderFactories() {}

  /** The scan's reader factory: a cached one when an identical factory was built before. */
  static PartitionReaderFactory of(ParquetScan scan) {
    if (scan.pushedAggregate().isDefined() || scan.pushedVariantExtractions().length > 0) {
      return scan.createReaderFactory(); // not built by lakeskip's scan builder: not keyed
    }
    // the key is taken before createReaderFactory, which writes into the scan's Hadoop conf
    Key key = new Key(scan);
    synchronized (CACHE) {
      PartitionReaderFactory hit = CACHE.get(key);
      if (hit != null) {
        return hit;
      }
    }
    PartitionReaderFactory built = scan.createReaderFactory();
    synchronized (CACHE) {
      CACHE.put(key, built);
    }
    return built;
  }

  /** Forget every factory (tests; a stopped SparkContext's broadcasts are unusable). */
  static void clear() {
    synchronized (CACHE) {
      CACHE.clear();
    }
  }

  private static final class Key {
    private final SparkSession session;
    private final String dataSchema;
    private final String readDataSchema;
    private final String readPartitionSchema;
    private final List<Filter> filters;
    private final String filterText;
    private final Map<String, String> options;
    private final scala.collection.immutable.Map<String, String> sqlConf;
    private final Map<String, String> hadoopConf;
    private final int hash;

    Key(ParquetScan scan) {
      this.session = scan.sparkSession();
      this.dataSchema = scan.dataSchema().json();
      this.readDataSchema = scan.readDataSchema().json();
      this.readPartitionSchema = scan.readPartitionSchema().json();
      Filter[] pushed = scan.pushedFilters();
      this.filters = Arrays.asList(pushed.clone());
      // toString as well as equals: Scala's == calls 0.0 and -0.0 (or 1 and 1L) equal
      this.filterText = Arrays.toString(pushed);
      this.options = new HashMap<>(scan.options().asCaseSensitiveMap());
      this.sqlConf = session.sessionState().conf().getAllConfs();
      this.hadoopConf = new HashMap<>();
      for (Iterator<Map.Entry<String, String>> it = scan.hadoopConf().iterator(); it.hasNext(); ) {
        Map.Entry<String, String> e = it.next();
        hadoopConf.put(e.getKey(), e.getValue());
      }
      this.hash =
          Objects.hash(
              System.identityHashCode(session), dataSchema, readDataSchema, readPartitionSchema,
              filterText, options, sqlConf, hadoopConf);
    }

    @Override
    public boolean equals(Object o) {
      if (!(o instanceof Key)) {
        return false;
      }
      Key k = (Key) o;
      return session == k.session
          && hash == k.hash
          && dataSchema.equals(k.dataSchema)
          && readDataSchema.equals(k.readDataSchema)
          && readPartitionSchema.equals(k.readPartitionSchema)
          && filterText.equals(k.filterText)
          && filters.equals(k.filters)
          && options.equals(k.options)
          && sqlConf.equals(k.sqlConf)
          && hadoopConf.equals(k.hadoopConf);
    }

    @Override
    public int hashCode() {
      return hash;
    }
  }
}
