package lakeskip.jvm.read;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Base64;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol;
import lakeskip.jvm.bridge.Protocol.LiteralType;
import lakeskip.jvm.bridge.Protocol.PredicateKey;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.GetMapValue;
import org.apache.spark.sql.catalyst.util.V2ExpressionBuilder;
import org.apache.spark.sql.connector.expressions.Cast;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Extract;
import org.apache.spark.sql.connector.expressions.GeneralScalarExpression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import scala.Option;

/**
 * Spark predicates -> JSON for the Python planner. Only a transcription: the meaning
 * (which predicates prune, exactness under NOT, literal coercion) is decided in Python.
 *
 * <p>Catalyst expressions are converted with {@code V2ExpressionBuilder} (internal: the
 * public API offers no Catalyst -> V2 conversion) and then read through the public V2
 * {@link Predicate} tree. Never {@code PredicateUtils.toV1}: on Spark 4.3 it drops an OR
 * branch ({@code (a AND f(x)) OR b} becomes {@code b}), which would skip matching files.
 *
 * <p>The tree's keys and tags are {@link Protocol.PredicateKey}, {@link Protocol.LiteralType}
 * and {@link Protocol#MAP_KEY_SEPARATOR} (from {@code lakeskip.spark.jvm.protocol}):
 *
 * <pre>
 *   predicate: {"op": "=", "args": [expr, ...]}     op = Spark V2 name: = <> <=> < <= > >=
 *                                                    IN IS_NULL IS_NOT_NULL STARTS_WITH AND
 *                                                    OR NOT ALWAYS_TRUE ALWAYS_FALSE ...
 *   expr:      {"ref": ["col", "nested"]} | {"lit": value, "type": "integer"} | predicate
 *              | {"fn": "CAST", "to": "date", "args": [expr], "other": "CAST(ts AS date)"}
 *              | {"fn": "EXTRACT", "field": "YEAR", "args": [expr], "other": ...}
 *              | {"fn": "SUBSTRING", "args": [expr, ...], "other": ...}  (any scalar function)
 *              | {"other": "UPPER(cat)"}            (anything else: Python treats as unknown)
 *   untranslatable Catalyst expression: null
 * </pre>
 */
public final class PredicateJson {
  private PredicateJson() {}

  static ArrayNode catalyst(scala.collection.immutable.Seq<org.apache.spark.sql.catalyst.expressions.Expression> filters) {
    ArrayNode out = Bridge.JSON.createArrayNode();
    scala.collection.Iterator<org.apache.spark.sql.catalyst.expressions.Expression> it =
        filters.iterator();
    while (it.hasNext()) {
      org.apache.spark.sql.catalyst.expressions.Expression e = it.next();
      Option<Predicate> p;
      try {
        p = new V2ExpressionBuilder(mapKeys(e), true).buildPredicate();
      } catch (RuntimeException ex) {
        p = Option.empty();
      }
      if (p.isDefined()) {
        out.add(expr(p.get()));
      } else {
        out.addNull();
      }
    }
    return out;
  }

  /**
   * {@code map_col['key']} (GetMapValue, which V2 predicates cannot express) becomes a column
   * named {@code map_col<NUL>key}, so Python can use Paimon's map-key indexes. Only for the
   * JSON: Parquet still gets the original expressions.
   */
  static org.apache.spark.sql.catalyst.expressions.Expression mapKeys(
      org.apache.spark.sql.catalyst.expressions.Expression e) {
    if (e instanceof GetMapValue) {
      GetMapValue g = (GetMapValue) e;
      if (g.child() instanceof AttributeReference
          && g.key() instanceof org.apache.spark.sql.catalyst.expressions.Literal
          && g.key().dataType() instanceof StringType) {
        Object key = ((org.apache.spark.sql.catalyst.expressions.Literal) g.key()).value();
        if (key != null) {
          AttributeReference a = (AttributeReference) g.child();
          return a.withName(a.name() + Protocol.MAP_KEY_SEPARATOR + key);
        }
      }
    }
    if (e.children().isEmpty()) {
      return e;
    }
    java.util.List<org.apache.spark.sql.catalyst.expressions.Expression> kids =
        new java.util.ArrayList<>();
    scala.collection.Iterator<org.apache.spark.sql.catalyst.expressions.Expression> it =
        e.children().iterator();
    while (it.hasNext()) {
      kids.add(mapKeys(it.next()));
    }
    return (org.apache.spark.sql.catalyst.expressions.Expression)
        e.withNewChildren(scala.jdk.javaapi.CollectionConverters.asScala(kids).toList());
  }

  public static ArrayNode predicates(Predicate[] predicates) {
    ArrayNode out = Bridge.JSON.createArrayNode();
    for (Predicate p : predicates) {
      out.add(expr(p));
    }
    return out;
  }

  static ObjectNode expr(Expression e) {
    ObjectNode n = Bridge.obj();
    if (e instanceof NamedReference) {
      ArrayNode names = n.putArray(PredicateKey.REF);
      for (String s : ((NamedReference) e).fieldNames()) {
        names.add(s);
      }
    } else if (e instanceof Literal) {
      literal(n, (Literal<?>) e);
    } else if (e instanceof Predicate) {
      Predicate p = (Predicate) e;
      n.put(PredicateKey.OP, p.name());
      ArrayNode args = n.putArray(PredicateKey.ARGS);
      for (Expression c : p.children()) {
        args.add(expr(c));
      }
    } else if (e instanceof Cast) {
      Cast c = (Cast) e;
      n.put(PredicateKey.FN, Protocol.PredicateFunction.CAST);
      n.put(PredicateKey.TO, c.dataType().typeName());
      n.putArray(PredicateKey.ARGS).add(expr(c.expression()));
      n.put(PredicateKey.OTHER, e.toString());
    } else if (e instanceof Extract) {
      Extract x = (Extract) e;
      n.put(PredicateKey.FN, Protocol.PredicateFunction.EXTRACT);
      n.put(PredicateKey.FIELD, x.field());
      n.putArray(PredicateKey.ARGS).add(expr(x.source()));
      n.put(PredicateKey.OTHER, e.toString());
    } else if (e instanceof GeneralScalarExpression) {
      GeneralScalarExpression g = (GeneralScalarExpression) e;
      n.put(PredicateKey.FN, g.name());
      ArrayNode args = n.putArray(PredicateKey.ARGS);
      for (Expression c : g.children()) {
        args.add(expr(c));
      }
      n.put(PredicateKey.OTHER, e.toString());
    } else {
      n.put(PredicateKey.OTHER, e.toString());
    }
    return n;
  }

  private static void literal(ObjectNode n, Literal<?> lit) {
    Object v = lit.value();
    DataType t = lit.dataType();
    if (v == null || t instanceof NullType) {
      n.putNull(PredicateKey.LIT);
      n.put(PredicateKey.TYPE, LiteralType.NULL);
    } else if (t instanceof BooleanType) {
      n.put(PredicateKey.LIT, (Boolean) v);
      n.put(PredicateKey.TYPE, LiteralType.BOOLEAN);
    } else if (t instanceof ByteType || t instanceof ShortType || t instanceof IntegerType
        || t instanceof LongType) {
      n.put(PredicateKey.LIT, ((Number) v).longValue());
      n.put(PredicateKey.TYPE, LiteralType.INTEGER);
    } else if (t instanceof FloatType || t instanceof DoubleType) {
      double d = ((Number) v).doubleValue();
      if (Double.isNaN(d) || Double.isInfinite(d)) {
        n.put(PredicateKey.LIT, Double.toString(d));
      } else {
        n.put(PredicateKey.LIT, d);
      }
      n.put(PredicateKey.TYPE, t instanceof FloatType ? LiteralType.FLOAT : LiteralType.DOUBLE);
    } else if (t instanceof DecimalType) {
      n.put(PredicateKey.LIT, ((Decimal) v).toJavaBigDecimal().toPlainString());
      n.put(PredicateKey.TYPE, LiteralType.DECIMAL);
    } else if (t instanceof StringType) {
      n.put(PredicateKey.LIT, v.toString());
      n.put(PredicateKey.TYPE, LiteralType.STRING);
    } else if (t instanceof DateType) {
      n.put(PredicateKey.LIT, ((Number) v).intValue());
      n.put(PredicateKey.TYPE, LiteralType.DATE);
    } else if (t instanceof TimestampType) {
      n.put(PredicateKey.LIT, ((Number) v).longValue());
      n.put(PredicateKey.TYPE, LiteralType.TIMESTAMP_LTZ);
    } else if (t instanceof TimestampNTZType) {
      n.put(PredicateKey.LIT, ((Number) v).longValue());
      n.put(PredicateKey.TYPE, LiteralType.TIMESTAMP_NTZ);
    } else if (t instanceof BinaryType) {
      n.put(PredicateKey.LIT, Base64.getEncoder().encodeToString((byte[]) v));
      n.put(PredicateKey.TYPE, LiteralType.BINARY);
    } else {
      n.put(PredicateKey.OTHER, lit.toString());
    }
  }
}
