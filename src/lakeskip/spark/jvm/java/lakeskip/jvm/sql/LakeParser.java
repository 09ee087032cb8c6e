package lakeskip.jvm.sql;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import lakeskip.jvm.LakeCatalog;
import lakeskip.jvm.LakeSessionCatalog;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult;
import org.apache.spark.sql.catalyst.parser.TemporalIdentifier;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * Spark's parser first; only what it rejects (Paimon's {@code WITH (...)}) and
 * {@code CALL sys.x(...)} go to Python, whose sqlglot layer rewrites them into Spark SQL on
 * the session's lakeskip catalog. {@code EXPLAIN PRUNING <query>} becomes
 * {@code CALL <catalog>.sys.explain_pruning(query => '<query>')} ({@link LakeExplain}).
 * Everything else is Spark's own parser, unchanged; a session with no lakeskip catalog
 * configured never calls Python from here.
 */
public final class LakeParser implements ParserInterface {
  private static final Pattern EXPLAIN_PRUNING =
      Pattern.compile("(?is)^\\s*EXPLAIN\\s+PRUNING\\s+(.*?)[\\s;]*$");
  private final SparkSession session;
  private final ParserInterface delegate;

  public LakeParser(SparkSession session, ParserInterface delegate) {
    this.session = session;
    this.delegate = delegate;
  }

  /** Over {@code delegate}, for the active session at each parse. */
  public LakeParser(ParserInterface delegate) {
    this(null, delegate);
  }

  /**
   * A session the catalog is attached to at run time has no extension (Spark reads
   * {@code spark.sql.extensions} once, when the session is built): this puts the parser over
   * its own, reflectively (Spark keeps it in a final field of SessionState). False where the
   * JVM refuses; then Paimon's WITH needs TBLPROPERTIES and {@code CALL sys.x} the catalog name.
   */
  public static boolean install(org.apache.spark.sql.classic.SparkSession session) {
    org.apache.spark.sql.internal.SessionState state = session.sessionState();
    if (state.sqlParser() instanceof LakeParser) {
      return true;
    }
    try {
      java.lang.reflect.Field f =
          org.apache.spark.sql.internal.SessionState.class.getDeclaredField("sqlParser");
      f.setAccessible(true);
      f.set(state, new LakeParser(session, state.sqlParser()));
      return true;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return false;
    }
  }

  private org.apache.spark.sql.classic.SparkSession session() {
    return (org.apache.spark.sql.classic.SparkSession)
        (session != null ? session : SparkSession.active());
  }

  /** The session's lakeskip catalogs: the current one first, then {@code lakeskip}. */
  private List<String> catalogs() {
    List<String> out = new ArrayList<>();
    scala.collection.Iterator<scala.Tuple2<String, String>> it =
        session().sessionState().conf().getAllConfs().iterator();
    while (it.hasNext()) {
      scala.Tuple2<String, String> kv = it.next();
      String key = kv._1();
      if (key.startsWith("spark.sql.catalog.") && key.indexOf('.', 18) < 0
          && (kv._2().equals(LakeCatalog.class.getName())
              || kv._2().equals(LakeSessionCatalog.class.getName()))) {
        out.add(key.substring(18));
      }
    }
    out.sort((a, b) -> Integer.compare(rank(a), rank(b)));
    return out;
  }

  /** The session's current catalog ("" when it cannot be had). */
  private String currentCatalog() {
    try {
      return session().sessionState().catalogManager().currentCatalog().name();
    } catch (RuntimeException e) {
      return "";
    }
  }

  private int rank(String name) {
    String current = currentCatalog();
    return name.equals(current) ? 0 : name.equals("lakeskip") ? 1 : 2;
  }

  private String rewrite(String sql) {
    List<String> catalogs = catalogs();
    if (catalogs.isEmpty() && !Bridge.registered()) {
      return null; // no lakeskip catalog here: nothing to rewrite, no brain to start
    }
    Matcher m = EXPLAIN_PRUNING.matcher(sql);
    if (m.matches()) {
      if (catalogs.isEmpty()) {
        return null;
      }
      String query = m.group(1).replace("\\", "\\\\").replace("'", "\\'");
      return "CALL `" + catalogs.get(0).replace("`", "``") + "`." + LakeExplain.NAME
          + "(query => '" + query + "')";
    }
    ObjectNode p = Bridge.obj();
    p.put(Key.SQL, sql);
    com.fasterxml.jackson.databind.node.ArrayNode names = p.putArray(Key.CATALOGS);
    for (String c : catalogs) {
      names.add(c);
    }
    p.put(Key.CURRENT_CATALOG, currentCatalog());
    JsonNode r = Bridge.ask(Op.REWRITE_SQL, p, null);
    JsonNode out = r.get(Key.SQL);
    return out == null || out.isNull() ? null : out.asText();
  }

  /** One of Spark's plan parsers ({@code parsePlan}, {@code parsePlanWithParameters}). */
  @FunctionalInterface
  private interface PlanParser {
    LogicalPlan parse(String sqlText) throws ParseException;
  }

  /**
   * The routing of every plan parse: {@code CALL} goes to Python first (Spark would take
   * {@code sys.x} for a catalog's procedure), anything else to Spark, and to Python only when
   * Spark rejects it.
   */
  private LogicalPlan route(String sqlText, PlanParser parser) throws ParseException {
    String head = sqlText.stripLeading();
    if (head.regionMatches(true, 0, "CALL", 0, 4)) {
      String rewritten = rewrite(sqlText);
      if (rewritten != null) {
        return parser.parse(rewritten);
      }
    }
    try {
      return parser.parse(sqlText);
    } catch (ParseException e) {
      String rewritten = rewrite(sqlText);
      if (rewritten == null) {
        throw e;
      }
      return parser.parse(rewritten);
    }
  }

  @Override
  public LogicalPlan parsePlan(String sqlText) throws ParseException {
    return route(sqlText, delegate::parsePlan);
  }

  @Override
  public LogicalPlan parsePlanWithParameters(String sqlText, ParameterContext context)
      throws ParseException {
    return route(sqlText, sql -> delegate.parsePlanWithParameters(sql, context));
  }

  @Override
  public TemporalIdentifier parseTemporalTableIdentifier(String sqlText) throws ParseException {
    return delegate.parseTemporalTableIdentifier(sqlText);
  }

  @Override
  public Expression parseExpression(String sqlText) throws ParseException {
    return delegate.parseExpression(sqlText);
  }

  @Override
  public TableIdentifier parseTableIdentifier(String sqlText) throws ParseException {
    return delegate.parseTableIdentifier(sqlText);
  }

  @Override
  public FunctionIdentifier parseFunctionIdentifier(String sqlText) throws ParseException {
    return delegate.parseFunctionIdentifier(sqlText);
  }

  @Override
  public scala.collection.immutable.Seq<String> parseMultipartIdentifier(String sqlText)
      throws ParseException {
    return delegate.parseMultipartIdentifier(sqlText);
  }

  @Override
  public LogicalPlan parseQuery(String sqlText) throws ParseException {
    return delegate.parseQuery(sqlText);
  }

  @Override
  public StructType parseRoutineParam(String sqlText) throws ParseException {
    return delegate.parseRoutineParam(sqlText);
  }

  @Override
  public SqlStatementSplitResult splitStatements(String sqlText) {
    return delegate.splitStatements(sqlText);
  }

  @Override
  public StructType parseTableSchema(String sqlText) throws ParseException {
    return delegate.parseTableSchema(sqlText);
  }

  @Override
  public DataType parseDataType(String sqlText) throws ParseException {
    return delegate.parseDataType(sqlText);
  }
}
