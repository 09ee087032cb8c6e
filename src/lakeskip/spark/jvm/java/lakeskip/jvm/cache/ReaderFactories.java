package lakeskip.jvm.cache;

import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.WeakHashMap;
import org.apache.hadoop.conf.Configuration;
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
 * configuration are in it entry by entry, so a changed setting (credentials, reader options,
 * time zone) builds a new factory; a setting of printed output only does not ({@link
 * SessionKey#OUTPUT_ONLY}). The settings are the copies {@link ScanCache} keys on ({@link
 * Settings}), compared by identity while the live ones are unchanged: a scan's Hadoop
 * configuration is Spark's copy of the SparkContext's with the SQL settings and the scan's
 * options set over it, which is checked once per configuration, the first time its factory
 * is asked for (before {@code createReaderFactory} writes into it); one that is not exactly
 * that (a setting changed between planning and the run, an entry set with its deprecated
 * names) is keyed on a copy of its own. So a scan built anew (a query's first run, a new
 * snapshot's, a new filter's; a reused scan keeps its factory) checks ~1,200 entries once
 * instead of copying them twice into new maps (the scan's configuration and the SQL
 * settings) that the cache then hashed and compared entry by entry. Bounded: an evicted
 * factory's broadcast is released by Spark's ContextCleaner once no plan holds it.
 */
public final class ReaderFactories {
  private static final Lru<SessionKey, PartitionReaderFactory> CACHE = new Lru<>(16);

  /**
   * What each scan's Hadoop configuration was made of, taken the first time its factory is
   * asked for: the shared settings copies it was checked against, or a copy of its own. Weak
   * keys, compared by identity ({@code Configuration} keeps {@code Object}'s).
   */
  private static final Map<Configuration, Object> MADE_OF =
      Collections.synchronizedMap(new WeakHashMap<>());

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
    Map<String, String> options = new HashMap<>(scan.options().asCaseSensitiveMap());
    Settings.Frozen sql = Settings.SQL.of(session.sessionState().conf().settings());
    return new SessionKey(
        session,
        scan.dataSchema().json(),
        scan.readDataSchema().json(),
        scan.readPartitionSchema().json(),
        Arrays.asList(pushed.clone()),
        Arrays.toString(pushed),
        options,
        sql,
        madeOf(session, scan.hadoopConf(), sql, options));
  }

  /**
   * What {@code conf} (a scan's Hadoop settings) was made of: the shared copies of the
   * SparkContext's Hadoop settings and of {@code sql} if it holds exactly what Spark makes of
   * them with {@code options}, else a copy of its own entries (output-only ones aside).
   * Remembered per configuration from its first call on, before {@code createReaderFactory}
   * writes into it (its writes are of the schemas and SQL settings, in the key already).
   */
  private static Object madeOf(SparkSession session, Configuration conf, Settings.Frozen sql,
      Map<String, String> options) {
    Object known = MADE_OF.get(conf);
    if (known != null) {
      return known;
    }
    Properties props = Settings.props(conf);
    Settings.Frozen hadoop =
        Settings.HADOOP.of(Settings.props(session.sparkContext().hadoopConfiguration()));
    Object made;
    if (props == null) {
      Map<String, String> copy = new HashMap<>();
      for (Iterator<Map.Entry<String, String>> it = conf.iterator(); it.hasNext(); ) {
        Map.Entry<String, String> e = it.next();
        copy.put(e.getKey(), e.getValue());
      }
      made = Settings.copyOf(copy);
    } else {
      synchronized (props) {
        made = hadoop != null && sql != null && hadoop.madeWith(props, sql, options)
            ? List.of(hadoop, sql)
            : Settings.copyOf(props);
      }
    }
    MADE_OF.put(conf, made);
    return made;
  }
}
