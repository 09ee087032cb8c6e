package lakeskip.jvm.read.pk;

import java.io.IOException;
import java.io.Serializable;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.Map;
import lakeskip.jvm.bridge.Protocol.Key;
import org.apache.spark.sql.catalyst.expressions.BaseOrdering;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One column's aggregate function of a primary-key table with {@code merge-engine =
 * aggregation} (Paimon 0.9's Field*Agg; the Python copy: {@code lakeskip.catalog.pk.aggregation}),
 * folded over a key's versions by {@link PkMerge}.
 */
final class FieldAgg implements Serializable {
  private static final long serialVersionUID = 1L;
  final String function;
  final String column;
  final DataType type;
  final boolean ignoreRetract;
  final String delimiter;
  private transient BaseOrdering ordering;

  FieldAgg(String function, String column, DataType type, boolean ignoreRetract, String delimiter) {
    this.function = function;
    this.column = column;
    this.type = type;
    this.ignoreRetract = ignoreRetract;
    this.delimiter = delimiter;
  }

  Object fold(Object[] in, boolean[] retract, Map<String, String> errors) throws IOException {
    Object acc = null;
    boolean started = false;
    try {
      for (int j = 0; j < in.length; j++) {
        Object x = in[j];
        if (retract[j]) {
          acc = ignoreRetract ? acc : retract(acc, x, errors);
        } else if (function.equals("first_value")) {
          if (!started) {
            acc = x;
            started = true;
          }
        } else if (function.equals("first_non_null_value")) {
          if (!started && x != null) {
            acc = x;
            started = true;
          }
        } else {
          acc = agg(acc, x);
        }
      }
    } catch (ArithmeticException e) {
      throw new IOException(
          "lakeskip: " + format(errors.get(Key.AGGREGATE_OVERFLOW)) + " (" + e.getMessage() + ")",
          e);
    }
    return acc;
  }

  private String format(String template) {
    return template
        .replace("{function}", function)
        .replace("{column}", column)
        .replace("{type}", type.sql());
  }

  private int compare(Object a, Object b) {
    if (ordering == null) {
      ordering = PkMerge.naturalOrdering(type);
    }
    return ordering.compare(
        new GenericInternalRow(new Object[] {a}), new GenericInternalRow(new Object[] {b}));
  }

  private Object agg(Object acc, Object x) {
    switch (function) {
      case "last_value":
        return x;
      case "last_non_null_value":
        return x == null ? acc : x;
      default:
        break;
    }
    if (acc == null || x == null) {
      return acc == null ? x : acc;
    }
    switch (function) {
      case "sum":
        return arith(acc, x, '+');
      case "product":
        return arith(acc, x, '*');
      case "max":
        return compare(acc, x) < 0 ? x : acc;
      case "min":
        return compare(acc, x) < 0 ? acc : x;
      case "bool_and":
        return (Boolean) acc && (Boolean) x;
      case "bool_or":
        return (Boolean) acc || (Boolean) x;
      case "listagg":
        return UTF8String.concat(
            (UTF8String) acc, UTF8String.fromString(delimiter), (UTF8String) x);
      default:
        throw new IllegalStateException("lakeskip: unknown aggregate function " + function);
    }
  }

  private Object retract(Object acc, Object x, Map<String, String> errors) throws IOException {
    switch (function) {
      case "sum":
        if (acc == null) {
          return x == null ? null : arith(x, null, '-');
        }
        return x == null ? acc : arith(acc, x, '-');
      case "product":
        return acc == null || x == null ? acc : arith(acc, x, '/');
      case "last_value":
        return null;
      case "last_non_null_value":
        return x != null ? null : acc;
      default:
        throw new IOException("lakeskip: " + format(errors.get(Key.AGGREGATE_RETRACT)));
    }
  }

  /** a op b in the column's type, Paimon's way; op '-' with b null: -a. */
  private Object arith(Object a, Object b, char op) {
    if (type instanceof DecimalType) {
      DecimalType d = (DecimalType) type;
      BigDecimal x = ((Decimal) a).toJavaBigDecimal();
      BigDecimal r;
      if (b == null) {
        r = x.negate();
      } else {
        BigDecimal y = ((Decimal) b).toJavaBigDecimal();
        switch (op) {
          case '+':
            r = x.add(y);
            break;
          case '-':
            r = x.subtract(y);
            break;
          case '*':
            r = x.multiply(y);
            break;
          default:
            r = x.divide(y, new MathContext(200));
        }
      }
      r = r.setScale(d.scale(), RoundingMode.HALF_UP);
      if (r.precision() > d.precision() && r.signum() != 0) {
        return null; // Paimon's Decimal.fromBigDecimal
      }
      return Decimal.apply(r, d.precision(), d.scale());
    }
    if (type instanceof FloatType) {
      float x = (Float) a;
      if (b == null) {
        return -x;
      }
      float y = (Float) b;
      return op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : x / y;
    }
    if (type instanceof DoubleType) {
      double x = (Double) a;
      if (b == null) {
        return -x;
      }
      double y = (Double) b;
      return op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : x / y;
    }
    long x = ((Number) a).longValue();
    long r;
    if (b == null) {
      r = Math.negateExact(x);
    } else {
      long y = ((Number) b).longValue();
      switch (op) {
        case '+':
          r = Math.addExact(x, y);
          break;
        case '-':
          r = Math.subtractExact(x, y);
          break;
        case '*':
          r = Math.multiplyExact(x, y);
          break;
        default:
          if (y == 0 || (x == Long.MIN_VALUE && y == -1)) {
            throw new ArithmeticException("division by " + y);
          }
          r = x / y;
      }
    }
    if (type instanceof LongType) {
      return r;
    }
    if (type instanceof IntegerType) {
      return Math.toIntExact(r);
    }
    if (type instanceof ShortType) {
      if (r != (short) r) {
        throw new ArithmeticException("short overflow");
      }
      return (short) r;
    }
    if (type instanceof ByteType) {
      if (r != (byte) r) {
        throw new ArithmeticException("byte overflow");
      }
      return (byte) r;
    }
    throw new IllegalStateException("lakeskip: " + function + " on " + type.sql());
  }
}
