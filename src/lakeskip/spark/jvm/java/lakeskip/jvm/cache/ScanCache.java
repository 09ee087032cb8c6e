package lakeskip.jvm.cache;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Scans already built for a query, reused by a repetition of it on the same snapshot.
 *
 * <p>Why: planning a catalog query costs a Python callback (the planner), Spark's Parquet scan
 * builder (a copy of the whole Hadoop configuration), split planning and a reader factory
 * lookup, about 5 ms per query that plain {@code spark.read.parquet} does not pay, repeated by
 * every repetition of a dashboard or lookup query though nothing changed.
 *
 * <p>When a built scan is reused, everything it was built from is equal, exactly:
 * <ul>
 *   <li>the table's snapshot <em>token</em>: Python names the table's latest schema and the
 *       snapshot (id, commit user and identifier, time, uniquely named manifest lists) when it
 *       loads the table for this very query, so any commit, schema change, rollback or
 *       re-creation changes it; a scan is stored only if Python planned that same snapshot;
 *   <li>the Catalyst filters (attribute ids and qualifiers aside, compared structurally and
 *       as text, since Scala's {@code ==} calls 0.0 and -0.0 equal): Spark's Parquet scan
 *       pushes those, and with the table, its pinned snapshot and the session's time zone
 *       and time-travel settings (all in the key) they make the question put to Python;
 *   <li>the required columns, the scan options, the session and its SQL settings (but those
 *       of printed output only, {@link SessionKey#OUTPUT_ONLY}), and the SparkContext's Hadoop
 *       configuration, entry by entry (credentials, {@code fs.*}).
 * </ul>
 * A query whose pruning report is collected (a tagged query, {@link Bridge#TAG_PROPERTY})
 * still gets one: a hit asks Python to file the stored report under the query's tag, and
 * plans afresh if Python no longer has it. Bounded (LRU); entries of a stopped session are
 * never hit again (the session is in the key) and age out.
 */
public final class ScanCache {
  private static final Lru<SessionKey, Entry> CACHE = new Lru<>(32);

  private ScanCache() {}

  /** A built scan and its pruning report's id. */
  private static final class Entry {
    final Scan scan;
    final String reportId;

    Entry(Scan scan, String reportId) {
      this.scan = scan;
      this.reportId = reportId;
    }
  }

  /**
   * The scan stored under {@code key} if this query may reuse it, else null. Its pruning
   * report must reach this query: nothing to do for an untagged query (nobody collects its
   * report); a tagged one asks Python to file the stored report under its tag, and gets null
   * if Python has let it go (then the query is planned afresh).
   */
  public static Scan reusable(SessionKey key) {
    Entry hit = CACHE.get(key);
    return hit != null && reported(hit.reportId) ? hit.scan : null;
  }

  private static boolean reported(String reportId) {
    if (Bridge.tag().isEmpty()) {
      return true;
    }
    ObjectNode p = Bridge.obj();
    p.put(Key.REPORT_ID, reportId);
    return Bridge.ask(Op.FILE_REPORT, p, null).path(Key.FOUND).asBoolean(false);
  }

  public static void put(SessionKey key, Scan scan, String reportId) {
    CACHE.put(key, new Entry(scan, reportId));
  }

  /** Forget every scan (a new Python handler: its reports are not the old one's). */
  public static void clear() {
    CACHE.clear();
  }

  /** The filters with attribute ids and qualifiers cleared (they differ per query). */
  static List<Expression> normalized(scala.collection.immutable.Seq<Expression> filters) {
    List<Expression> out = new ArrayList<>();
    ExprId zero = ExprId.apply(0L);
    scala.collection.immutable.Seq<String> none =
        scala.jdk.javaapi.CollectionConverters.asScala(new ArrayList<String>()).toList();
    scala.PartialFunction<Expression, Expression> strip =
        new scala.runtime.AbstractPartialFunction<Expression, Expression>() {
          @Override
          public boolean isDefinedAt(Expression x) {
            return x instanceof AttributeReference;
          }

          @Override
          public Expression apply(Expression x) {
            return ((AttributeReference) x).withExprId(zero).withQualifier(none);
          }
        };
    for (scala.collection.Iterator<Expression> it = filters.iterator(); it.hasNext(); ) {
      out.add(it.next().transform(strip));
    }
    return out;
  }

  /**
   * The key of a scan of {@code table} (its name and pinned snapshot) at snapshot
   * {@code token}: with the filters and the SQL settings (time zone, {@code spark.paimon.*})
   * these determine the plan_scan payload; the required columns and options complete what
   * Spark's Parquet scan is built from. Null if the Hadoop settings cannot be read: then
   * nothing is cached.
   */
  public static SessionKey key(
      SparkSession session, String token, String table,
      scala.collection.immutable.Seq<Expression> filters, StructType required,
      CaseInsensitiveStringMap options) {
    Settings.Frozen hadoop =
        Settings.HADOOP.of(Settings.props(session.sparkContext().hadoopConfiguration()));
    if (hadoop == null) {
      return null; // unreadable: nothing is cached
    }
    List<Expression> normal = normalized(filters);
    return new SessionKey(
        session,
        token,
        table,
        // the SQL settings hold the time zone only when set; the default is the JVM's
        session.sessionState().conf().sessionLocalTimeZone(),
        normal,
        normal.toString(),
        required,
        new HashMap<>(options.asCaseSensitiveMap()),
        Settings.SQL.of(session.sessionState().conf().settings()),
        hadoop);
  }
}
