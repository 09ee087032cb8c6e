package lakeskip.jvm.cache;

import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.hadoop.conf.Configuration;

/**
 * Unchanging copies of one live settings map (a session's SQL settings, the SparkContext's
 * Hadoop configuration) for cache keys, without {@link SessionKey#OUTPUT_ONLY}: {@link #of}
 * hands out the same copy for as long as the live map holds the same entries, so a warm key
 * compares it by identity and hashes it once, where a new map per key ({@code getAllConfs},
 * a copy of ~1,000 Hadoop entries) cost ~0.3 ms to build and hash and ~0.8 ms to compare per
 * scan: most of {@code V2ScanRelationPushDown}'s time on a warm query (measured: TPC-H q2,
 * 9 scans). Spark counts no changes to either map, so each call still compares every live
 * entry with the copy (the live values are the copy's own objects: an identity check each).
 */
final class Settings {
  /** The copies of sessions' SQL settings, shared by every cache key. */
  static final Settings SQL = new Settings();
  /** The copies of the SparkContext's Hadoop settings ({@link #props}), shared likewise. */
  static final Settings HADOOP = new Settings();

  /** An unchanging copy, hashed once; equal to another with the same entries. */
  static final class Frozen {
    private final Map<Object, Object> map = new HashMap<>();
    private final int hash;

    private Frozen(Map<?, ?> live) {
      live.forEach((k, v) -> {
        if (!SessionKey.OUTPUT_ONLY.contains(k)) {
          map.put(k, v);
        }
      });
      hash = map.hashCode();
    }

    /**
     * Whether {@code live} holds exactly this copy's entries (output-only ones aside). With
     * {@code forEach}: no entry objects, no iterator of a synchronised view.
     */
    private boolean sameAs(Map<?, ?> live) {
      int[] n = {0};
      boolean[] same = {true};
      live.forEach((k, v) -> {
        if (same[0] && !SessionKey.OUTPUT_ONLY.contains(k)) {
          Object mine = map.get(k);
          same[0] = mine == v || mine != null && mine.equals(v);
          n[0]++;
        }
      });
      return same[0] && n[0] == map.size();
    }

    /**
     * Whether {@code props} (a scan's Hadoop settings) holds exactly what Spark's {@code
     * SessionState.newHadoopConfWithOptions} makes of these copies and {@code options}: this
     * copy's (the SparkContext's) entries, over them {@code sql}'s, over those the options'
     * (but {@code path} and {@code paths}), output-only ones aside; no entry more or less.
     */
    boolean madeWith(Map<?, ?> props, Frozen sql, Map<String, String> options) {
      Map<String, String> opts = new HashMap<>();
      options.forEach((k, v) -> {
        if (v != null && !k.equals("path") && !k.equals("paths")
            && !SessionKey.OUTPUT_ONLY.contains(k)) {
          opts.put(k, v);
        }
      });
      int want = map.size();
      for (Map.Entry<Object, Object> e : sql.map.entrySet()) {
        want += e.getValue() != null && !map.containsKey(e.getKey()) ? 1 : 0;
      }
      for (String k : opts.keySet()) {
        want += map.containsKey(k) || sql.map.get(k) != null ? 0 : 1;
      }
      int[] n = {0};
      boolean[] same = {true};
      props.forEach((k, v) -> {
        if (same[0] && !SessionKey.OUTPUT_ONLY.contains(k)) {
          Object expected = opts.get(k);
          expected = expected != null ? expected : sql.map.get(k);
          expected = expected != null ? expected : map.get(k);
          same[0] = expected == v || expected != null && expected.equals(v);
          n[0]++;
        }
      });
      return same[0] && n[0] == want;
    }

    @Override
    public boolean equals(Object o) {
      return o == this
          || o instanceof Frozen && ((Frozen) o).hash == hash && ((Frozen) o).map.equals(map);
    }

    @Override
    public int hashCode() {
      return hash;
    }
  }

  private Frozen last;

  private static volatile Method getProps;

  /**
   * {@code conf}'s entries as stored ({@code Configuration.getProps}, protected: the public
   * iterator copies every entry into a new map, which is what a cache key saves), or null if
   * they cannot be read (then the caller does without).
   */
  static Properties props(Configuration conf) {
    try {
      Method m = getProps;
      if (m == null) {
        m = Configuration.class.getDeclaredMethod("getProps");
        m.setAccessible(true);
        getProps = m;
      }
      return (Properties) m.invoke(conf);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  /** An unchanging copy of {@code live}, not shared (null: null). */
  static Frozen copyOf(Map<?, ?> live) {
    if (live == null) {
      return null;
    }
    synchronized (live) {
      return new Frozen(live);
    }
  }

  /**
   * The copy of {@code live} (null: null). Reads it under its own lock, which {@code
   * Collections.synchronizedMap} (SQL settings) and {@code Properties} (Hadoop's) take on
   * every change.
   */
  synchronized Frozen of(Map<?, ?> live) {
    if (live == null) {
      return null;
    }
    synchronized (live) {
      Frozen f = last;
      if (f == null || !f.sameAs(live)) {
        f = new Frozen(live);
        last = f;
      }
      return f;
    }
  }
}
