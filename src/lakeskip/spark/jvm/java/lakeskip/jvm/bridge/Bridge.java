package lakeskip.jvm.bridge;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.POJONode;
import java.util.function.Function;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.cache.ScanCache;
import lakeskip.jvm.catalog.TableCache;
import lakeskip.jvm.read.ScanFiles;
import org.apache.spark.QueryContext;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.internal.SQLConf;
import scala.Option;

/**
 * The process-wide handle on the Python side. Java never decides anything itself: every
 * catalog, scan and write question goes through {@link #call}, and a Python error comes back
 * as one readable {@link AnalysisException} (no py4j stack).
 */
public final class Bridge {
  /** Version of the JSON protocol ({@link Protocol#VERSION}); Python checks it on registration. */
  public static final int PROTOCOL = Protocol.VERSION;

  /** Spark local property correlating callbacks with the Python thread that ran the query. */
  public static final String TAG_PROPERTY = Protocol.TAG_PROPERTY;

  public static final ObjectMapper JSON = new ObjectMapper();

  /**
   * JVM system property naming a file that gets one line per callback, appended as it
   * returns: {@code <op> <round-trip ms> <payload chars> <reply chars> <thread>}, tab-separated
   * ({@code -Dlakeskip.callback.trace=/tmp/calls.tsv} in {@code spark.driver.extraJavaOptions}).
   * What a JVM front end asks of its Python brain per statement, where no Python driver
   * can count the callbacks (the front-end tests count them); unset: nothing is written.
   */
  public static final String TRACE_PROPERTY = "lakeskip.callback.trace";

  private static final String TRACE = System.getProperty(TRACE_PROPERTY);

  private static volatile PythonBridge handler;

  private Bridge() {}

  /** A PySpark driver's in-process handler (a brain process started earlier ends). */
  public static int register(PythonBridge h) {
    Brain.retire();
    install(h);
    return PROTOCOL;
  }

  static synchronized void install(PythonBridge h) {
    handler = h;
    // what the JVM kept from an earlier handler answered for another Python side
    TableCache.clear();
    ScanCache.clear();
  }

  /** Forget {@code h} if it is still the handler (a brain that died). */
  static synchronized void uninstall(PythonBridge h) {
    if (handler == h) {
      handler = null;
    }
  }

  static PythonBridge current() {
    return handler;
  }

  public static void unregister() {
    handler = null;
  }

  public static boolean registered() {
    return handler != null;
  }

  public static ObjectNode obj() {
    return JSON.createObjectNode();
  }

  /**
   * The querying session's time zone and {@code spark.paimon.*} settings (time travel), sent
   * with a callback: Python reading them back with {@code spark.conf.get} cost one more
   * round trip into the JVM per key and query.
   */
  public static ObjectNode session() {
    SQLConf conf = SQLConf.get();
    ObjectNode n = obj();
    n.put(Key.TIME_ZONE, conf.sessionLocalTimeZone());
    ObjectNode settings = n.putObject(Key.SETTINGS);
    scala.collection.Iterator<scala.Tuple2<String, String>> it = conf.getAllConfs().iterator();
    while (it.hasNext()) {
      scala.Tuple2<String, String> kv = it.next();
      if (kv._1().startsWith("spark.paimon.")) {
        settings.put(kv._1(), kv._2());
      }
    }
    return n;
  }

  /** The tag of the calling thread's query, or "" (callbacks run on other Python threads). */
  public static String tag() {
    try {
      SparkContext sc = SparkSession.active().sparkContext();
      String t = sc.getLocalProperty(TAG_PROPERTY);
      return t == null ? "" : t;
    } catch (RuntimeException e) {
      return "";
    }
  }

  public static JsonNode call(String op, ObjectNode payload, Object arg) {
    long started = TRACE == null ? 0L : System.nanoTime();
    // the registered handler, or a Python brain started for this JVM (Brain)
    PythonBridge h = Brain.handler();
    payload.put(Key.PROTOCOL, PROTOCOL);
    payload.put(Key.TAG, tag());
    String reply;
    String json;
    try {
      json = JSON.writeValueAsString(payload);
    } catch (Exception e) {
      throw error("lakeskip: cannot encode " + op, e);
    }
    try {
      reply = h.call(op, json, arg);
    } catch (Exception e) {
      if (!Brain.owns(h) || Brain.alive()) {
        throw error(
            "lakeskip: Python handler failed in " + op + ": " + firstLine(e.getMessage()), e);
      }
      // the brain died (perhaps just before this call, not yet reaped): a question that
      // changes nothing is asked again of a new brain; anything else fails in one line
      uninstall(h);
      if (!Protocol.READ_ONLY.contains(op)) {
        throw Brain.died(op);
      }
      try {
        reply = Brain.handler().call(op, json, arg);
      } catch (Exception again) {
        if (again instanceof AnalysisException) {
          throw Bridge.<RuntimeException>sneaky(again); // the restart failed: its own line
        }
        throw Brain.died(op);
      }
    }
    if (TRACE != null) {
      trace(op, System.nanoTime() - started, json.length(), reply == null ? 0 : reply.length());
    }
    JsonNode node;
    try {
      node = read(reply);
    } catch (Exception e) {
      throw error("lakeskip: unreadable reply to " + op, e);
    }
    if (node.has(Key.ERROR)) {
      JsonNode err = node.get(Key.ERROR);
      throw new PythonError(err.path(Key.KIND).asText(""), err.path(Key.MESSAGE).asText(""));
    }
    return node;
  }

  /**
   * A reply as {@code JSON.readTree} reads it, except that each {@code files} object in it
   * is read straight into a {@link ScanFiles} (held by a {@link POJONode}: {@link
   * ScanFiles#of(JsonNode)} returns it), no tree of its per-file columns made.
   */
  public static JsonNode read(String reply) throws java.io.IOException {
    try (JsonParser p = JSON.getFactory().createParser(reply)) {
      if (p.nextToken() == null) {
        return com.fasterxml.jackson.databind.node.MissingNode.getInstance();
      }
      JsonNode node = value(p, true);
      if (p.nextToken() != null) {
        throw new java.io.IOException("trailing content after a reply's JSON value");
      }
      return node;
    }
  }

  /** The JSON value {@code p} is at, as a tree ({@link JsonNode} of {@code readTree}'s types). */
  public static JsonNode readValue(JsonParser p) throws java.io.IOException {
    return value(p, false);
  }

  private static JsonNode value(JsonParser p, boolean files) throws java.io.IOException {
    JsonNodeFactory f = JSON.getNodeFactory();
    switch (p.currentToken()) {
      case START_OBJECT: {
        ObjectNode o = f.objectNode();
        for (String name = p.nextFieldName(); name != null; name = p.nextFieldName()) {
          JsonToken t = p.nextToken();
          o.set(name, files && t == JsonToken.START_OBJECT && Key.FILES.equals(name)
              ? new POJONode(ScanFiles.parse(p)) : value(p, files));
        }
        return o;
      }
      case START_ARRAY: {
        ArrayNode a = f.arrayNode();
        while (p.nextToken() != JsonToken.END_ARRAY) {
          a.add(value(p, files));
        }
        return a;
      }
      case VALUE_STRING:
        return f.textNode(p.getText());
      case VALUE_NUMBER_INT:
        switch (p.getNumberType()) {
          case INT:
            return f.numberNode(p.getIntValue());
          case LONG:
            return f.numberNode(p.getLongValue());
          default:
            return f.numberNode(p.getBigIntegerValue());
        }
      case VALUE_NUMBER_FLOAT:
        return p.getNumberType() == JsonParser.NumberType.BIG_DECIMAL
            ? f.numberNode(p.getDecimalValue()) : f.numberNode(p.getDoubleValue());
      case VALUE_TRUE:
        return f.booleanNode(true);
      case VALUE_FALSE:
        return f.booleanNode(false);
      case VALUE_NULL:
        return f.nullNode();
      default:
        throw new java.io.IOException("unexpected JSON token " + p.currentToken());
    }
  }

  private static synchronized void trace(String op, long nanos, int sent, int got) {
    String line = op + "\t" + String.format(java.util.Locale.ROOT, "%.3f", nanos / 1e6) + "\t"
        + sent + "\t" + got + "\t" + Thread.currentThread().getName() + "\n";
    try (java.io.FileOutputStream out = new java.io.FileOutputStream(TRACE, true)) {
      out.write(line.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    } catch (java.io.IOException e) {
      // a diagnostic: the callback itself succeeded
    }
  }

  /**
   * {@link #call} with any Python error as one readable {@link AnalysisException}: the one way
   * a catalog, write or DML callback reports an error.
   */
  public static JsonNode ask(String op, ObjectNode payload, Object arg) {
    return ask(op, payload, arg, kind -> null);
  }

  /**
   * {@link #ask}, except that a Python error of a kind {@code spark} maps to one of Spark's own
   * exceptions (table or namespace not found, table exists: Spark's analyzer acts on those) is
   * thrown as that exception. Those are checked exceptions: the calling method declares the
   * ones its Spark interface allows, and {@code spark} returns only those.
   */
  public static JsonNode ask(
      String op, ObjectNode payload, Object arg, Function<String, Exception> spark) {
    try {
      return call(op, payload, arg);
    } catch (PythonError e) {
      Exception translated = spark.apply(e.kind);
      if (translated != null) {
        throw Bridge.<RuntimeException>sneaky(translated);
      }
      throw e.analysis();
    }
  }

  public static String firstLine(String s) {
    if (s == null) return "";
    String t = s.strip();
    int i = t.indexOf('\n');
    return i < 0 ? t : t.substring(0, i);
  }

  /**
   * A user-facing error: one line, no JVM stack in PySpark's message. AnalysisException is a
   * checked exception in Java's eyes (Spark's Scala code throws it anywhere), so it is thrown
   * here; the return type only lets callers write {@code throw Bridge.error(...)}.
   */
  public static RuntimeException error(String message, Throwable cause) {
    throw Bridge.<RuntimeException>sneaky(analysis(message, cause));
  }

  @SuppressWarnings("unchecked")
  private static <T extends Throwable> T sneaky(Throwable t) throws T {
    throw (T) t;
  }

  /**
   * With a SQLSTATE (42000, or {@code 58000} for the brain's system errors): Spark's CLI
   * prints a stack trace under the message of any error without one, as for an internal
   * error, and JDBC / Connect clients get a class to branch on.
   */
  static AnalysisException analysis(String message, Throwable cause) {
    return new AnalysisException(
        message,
        Option.empty(),
        Option.empty(),
        Option.apply(cause),
        Option.empty(),
        scala.collection.immutable.Map$.MODULE$.<String, String>empty(),
        new QueryContext[0],
        Option.apply(message.contains("Python brain") ? "58000" : "42000"),
        Option.empty());
  }

  /** A typed error from Python; callers turn the kinds Spark cares about into its exceptions. */
  static final class PythonError extends RuntimeException {
    final String kind;

    PythonError(String kind, String message) {
      super(message);
      this.kind = kind;
    }

    RuntimeException analysis() {
      return error(getMessage(), null);
    }
  }

  public static NoSuchTableException noSuchTable(Identifier ident) {
    return new NoSuchTableException(ident);
  }

  public static NoSuchNamespaceException noSuchNamespace(String[] ns) {
    return new NoSuchNamespaceException(ns);
  }
}
