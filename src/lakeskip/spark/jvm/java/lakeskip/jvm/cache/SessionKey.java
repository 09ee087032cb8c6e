package lakeskip.jvm.cache;

import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.SparkSession;

/**
 * A cache key of exact values within one session: equal only for the same session object and
 * equal parts (compared with {@code equals}, in order; null allowed). Callers put in every
 * input the cached object was built from, and a value's text beside it where {@code equals}
 * is too loose (Scala's {@code ==} calls 0.0 and -0.0 equal).
 */
public final class SessionKey {
  final SparkSession session;
  private final List<Object> parts;
  private final int hash;

  /**
   * SQL settings that only shape how a result is printed, which Spark may set in the middle
   * of a session: {@code spark.sql.binaryOutputStyle}, set by Spark's {@code HiveResult} the
   * first time it formats rows for {@code spark-sql} or the Thrift server (after the session's
   * first query was planned, so that query's cached scan was never hit again: planned anew on
   * its second run). No cached object depends on it: it is read only where Spark casts binary
   * to or from a string, which Spark's own operators evaluate per query (never part of a
   * cached scan: Python keeps every file for such a cast, Parquet pushes none) or constant
   * folding turns into a literal of the filters, which are in the key.
   */
  static final java.util.List<String> OUTPUT_ONLY =
      java.util.List.of("spark.sql.binaryOutputStyle");

  public SessionKey(SparkSession session, Object... parts) {
    this.session = session;
    this.parts = Arrays.asList(parts);
    this.hash = 31 * System.identityHashCode(session) + this.parts.hashCode();
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof SessionKey)) {
      return false;
    }
    SessionKey k = (SessionKey) o;
    return session == k.session && hash == k.hash && parts.equals(k.parts);
  }

  @Override
  public int hashCode() {
    return hash;
  }
}
