package lakeskip.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.TemporalIdentifier;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * Spark's parser first; only what it rejects (Paimon's {@code WITH (...)}) and
 * {@code CALL sys.x(...)} go to Python, whose sqlglot layer rewrites them into Spark SQL on
 * the lakeskip catalog. Everything else is Spark's own parser, unchanged.
 */
public final class LakeParser implements ParserInterface {
  private final ParserInterface delegate;

  public LakeParser(ParserInterface delegate) {
    this.delegate = delegate;
  }

  private String rewrite(String sql) {
    if (!Bridge.registered()) {
      return null;
    }
    ObjectNode p = Bridge.obj();
    p.put("sql", sql);
    JsonNode r = Bridge.ask("rewrite_sql", p, null);
    JsonNode out = r.get("sql");
    return out == null || out.isNull() ? null : out.asText();
  }

  @Override
  public LogicalPlan parsePlan(String sqlText) throws ParseException {
    String head = sqlText.stripLeading();
    if (head.regionMatches(true, 0, "CALL", 0, 4)) {
      String rewritten = rewrite(sqlText);
      if (rewritten != null) {
        return delegate.parsePlan(rewritten);
      }
    }
    try {
      return delegate.parsePlan(sqlText);
    } catch (ParseException e) {
      String rewritten = rewrite(sqlText);
      if (rewritten == null) {
        throw e;
      }
      return delegate.parsePlan(rewritten);
    }
  }

  @Override
  public LogicalPlan parsePlanWithParameters(String sqlText, ParameterContext context)
      throws ParseException {
    String head = sqlText.stripLeading();
    if (head.regionMatches(true, 0, "CALL", 0, 4)) {
      String rewritten = rewrite(sqlText);
      if (rewritten != null) {
        return delegate.parsePlanWithParameters(rewritten, context);
      }
    }
    try {
      return delegate.parsePlanWithParameters(sqlText, context);
    } catch (ParseException e) {
      String rewritten = rewrite(sqlText);
      if (rewritten == null) {
        throw e;
      }
      return delegate.parsePlanWithParameters(rewritten, context);
    }
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
