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
