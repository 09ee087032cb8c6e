package lakeskip.jvm.read.pk;

import java.io.IOException;
import java.io.Serializable;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import lakeskip.jvm.bridge.Protocol.Key;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BaseOrdering;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.RowOrdering$;
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
import scala.jdk.javaapi.CollectionConverters;

/**
 * How the versions of one primary-key become its row, in Java: the rules of
 * {@code lakeskip.catalog.pk.merge_engine} and {@code lakeskip.catalog.pk.aggregation} (the Python
 * copy; both are tested against tests/cases/pk_merge_cases.json). Versions are ordered oldest
 * first by the sequence fields (NULL oldest, ascending or descending), then {@code
 * _SEQUENCE_NUMBER}; then deduplicate takes the newest, partial-update each column's newest
 * non-null value, aggregation folds each column with its function. The error texts come from
 * Python with the rest of the rule ({@code errors}).
 */
final class PkMerge implements Serializable {
  private static final long serialVersionUID = 1L;

  private final String engine;
  private final boolean ignoreDelete;
  private final boolean removeRecordOnDelete;
  /** Keep {@code -U}/{@code -D} winners (Paimon's forceKeepDelete: t$audit_log). */
  private final boolean keepDelete;
  private final int sequence;
  private final int kind;
  private final int[] out;
  private final DataType[] outTypes;
  private final int[] seqFields;
  private final DataType[] seqTypes;
  private final boolean seqDescending;
  private final Agg[] aggs;
  private final Map<String, String> errors;
  private final Group[] groups;
  private transient Comparator<InternalRow> order;

  /**
   * A partial-update sequence group: its sequence columns (ordinals in the file rows) and the
   * output positions it sets (its columns and its sequence columns, where projected).
   */
  static final class Group implements Serializable {
    private static final long serialVersionUID = 1L;
    final int[] seq;
    final DataType[] seqTypes;
    final int[] outValues;
    final int[] outSeq;
    private transient BaseOrdering[] one;

    Group(int[] seq, DataType[] seqTypes, int[] outValues, int[] outSeq) {
      this.seq = seq;
      this.seqTypes = seqTypes;
      this.outValues = outValues;
      this.outSeq = outSeq;
    }

    /** The version's group sequence against the row's (NULL smallest); null: all NULL. */
    Integer compare(InternalRow v, Object[] current) {
      if (one == null) {
        one = new BaseOrdering[seq.length];
        for (int i = 0; i < seq.length; i++) {
          one[i] = naturalOrdering(seqTypes[i]);
        }
      }
      boolean empty = true;
      int result = 0;
      for (int i = 0; i < seq.length; i++) {
        Object a = v.isNullAt(seq[i]) ? null : v.get(seq[i], seqTypes[i]);
        empty &= a == null;
        if (result != 0) {
          continue;
        }
        Object b = current[i];
        if (a == null || b == null) {
          result = a == null ? (b == null ? 0 : -1) : 1;
        } else {
          result =
              one[i].compare(
                  new GenericInternalRow(new Object[] {a}), new GenericInternalRow(new Object[] {b}));
        }
      }
      return empty ? null : result;
    }
  }

  PkMerge(
      String engine, boolean ignoreDelete, boolean removeRecordOnDelete, boolean keepDelete,
      int sequence, int kind, int[] out, DataType[] outTypes, int[] seqFields,
      DataType[] seqTypes, boolean seqDescending, Agg[] aggs, Map<String, String> errors,
      Group[] groups) {
    this.groups = groups;
    this.engine = engine;
    this.ignoreDelete = ignoreDelete;
    this.removeRecordOnDelete = removeRecordOnDelete;
    this.keepDelete = keepDelete;
    this.sequence = sequence;
    this.kind = kind;
    this.out = out;
    this.outTypes = outTypes;
    this.seqFields = seqFields;
    this.seqTypes = seqTypes;
    this.seqDescending = seqDescending;
    this.aggs = aggs;
    this.errors = new java.util.HashMap<>(errors);
  }

  private static boolean isAdd(byte kind) {
    return kind == 0 || kind == 2; // +I, +U
  }

  /** The versions' order, oldest first (Paimon's UserDefinedSeqComparator, then seq). */
  private Comparator<InternalRow> order() {
    if (order == null) {
      BaseOrdering[] one = new BaseOrdering[seqFields.length];
      for (int i = 0; i < one.length; i++) {
        one[i] = naturalOrdering(seqTypes[i]);
      }
      order =
          (a, b) -> {
            for (int i = 0; i < seqFields.length; i++) {
              boolean na = a.isNullAt(seqFields[i]);
              boolean nb = b.isNullAt(seqFields[i]);
              if (na || nb) {
                if (na != nb) {
                  return na ? -1 : 1; // NULL is oldest, ascending or not
                }
                continue;
              }
              int c =
                  one[i].compare(
                      new GenericInternalRow(new Object[] {a.get(seqFields[i], seqTypes[i])}),
                      new GenericInternalRow(new Object[] {b.get(seqFields[i], seqTypes[i])}));
              if (c != 0) {
                return seqDescending ? -c : c;
              }
            }
            return Long.compare(a.getLong(sequence), b.getLong(sequence));
          };
    }
    return order;
  }

  static BaseOrdering naturalOrdering(DataType t) {
    return RowOrdering$.MODULE$.createNaturalAscendingOrdering(
        CollectionConverters.asScala(Arrays.asList(t)).toList());
  }

  /** The key's row (null: none) from its versions (files' rows, any order). */
  InternalRow merge(List<InternalRow> versions) throws IOException {
    versions.sort(order());
    InternalRow last = versions.get(versions.size() - 1);
    switch (engine) {
      case "partial-update":
        if (groups.length > 0 && versions.size() == 1) {
          break; // a lone version stays as it is (ReducerMergeFunctionWrapper)
        }
        return partialUpdate(versions);
      case "aggregation":
        if (versions.size() > 1) {
          return aggregate(versions);
        }
        break;
      default:
        break;
    }
    return isAdd(last.getByte(kind)) || keepDelete ? project(last) : null;
  }

  private InternalRow project(InternalRow v) {
    Object[] values = new Object[out.length];
    copyAll(v, values);
    return new GenericInternalRow(values);
  }

  private void copyAll(InternalRow v, Object[] values) {
    for (int i = 0; i < values.length; i++) {
      values[i] = v.isNullAt(out[i]) ? null : v.get(out[i], outTypes[i]);
    }
  }

  /**
   * Paimon's {@code PartialUpdateMergeFunction} without sequence groups or aggregation:
   * versions oldest first; +I/+U set their non-null columns; a retract version first seeds the
   * row with its values; a -D resets the row to its values when remove-record-on-delete (and,
   * newest, means no row); retracts are skipped with ignore-delete and are an error otherwise.
   * Null: no row.
   */
  private InternalRow partialUpdate(List<InternalRow> versions) throws IOException {
    if (groups.length > 0) {
      return groupedUpdate(versions);
    }
    Object[] values = new Object[out.length];
    boolean filled = false;
    boolean meetInsert = false;
    boolean deleted = false;
    for (InternalRow v : versions) {
      byte k = v.getByte(kind);
      deleted = false;
      if (!isAdd(k)) {
        if (!filled) {
          copyAll(v, values);
          filled = true;
        }
        if (ignoreDelete) {
          continue;
        }
        if (removeRecordOnDelete) {
          if (k == 3) {
            deleted = true;
            copyAll(v, values);
          }
          continue;
        }
        throw new IOException("lakeskip: " + errors.get(Key.PARTIAL_UPDATE_RETRACT));
      }
      for (int i = 0; i < values.length; i++) {
        if (!v.isNullAt(out[i])) {
          values[i] = v.get(out[i], outTypes[i]);
        }
      }
      meetInsert = true;
      filled = true;
    }
    return deleted || !meetInsert ? null : new GenericInternalRow(values);
  }

  /**
   * Partial-update with sequence groups (lakeskip.catalog.pk.merge_engine's {@code _grouped}):
   * a version whose group sequence is not all NULL and not older than the row's sets the whole
   * group, NULLs included (a retract sets the sequence columns and clears the others); other
   * columns take the newest non-null value; a key with no +I/+U version has no row.
   */
  private InternalRow groupedUpdate(List<InternalRow> versions) {
    Object[] values = new Object[out.length];
    boolean[] grouped = new boolean[out.length];
    Object[][] current = new Object[groups.length][];
    for (int g = 0; g < groups.length; g++) {
      current[g] = new Object[groups[g].seq.length];
      for (int i : groups[g].outValues) {
        grouped[i] = true;
      }
      for (int i : groups[g].outSeq) {
        grouped[i] = true;
      }
    }
    boolean meetInsert = false;
    for (InternalRow v : versions) {
      boolean retract = !isAdd(v.getByte(kind));
      if (retract && ignoreDelete) {
        continue;
      }
      if (!retract) {
        meetInsert = true;
        for (int i = 0; i < values.length; i++) {
          if (!grouped[i] && !v.isNullAt(out[i])) {
            values[i] = v.get(out[i], outTypes[i]);
          }
        }
      }
      for (int g = 0; g < groups.length; g++) {
        Group group = groups[g];
        Integer c = group.compare(v, current[g]);
        if (c == null || c < 0) {
          continue;
        }
        for (int i : group.outValues) {
          values[i] = retract || v.isNullAt(out[i]) ? null : v.get(out[i], outTypes[i]);
        }
        for (int j = 0; j < group.seq.length; j++) {
          current[g][j] = v.isNullAt(group.seq[j]) ? null : v.get(group.seq[j], group.seqTypes[j]);
        }
        for (int i : group.outSeq) {
          values[i] = v.isNullAt(out[i]) ? null : v.get(out[i], outTypes[i]);
        }
      }
    }
    return meetInsert ? new GenericInternalRow(values) : null;
  }

  /** Paimon's {@code AggregateMergeFunction} over two or more versions: always a +I row. */
  private InternalRow aggregate(List<InternalRow> versions) throws IOException {
    Object[] values = new Object[out.length];
    boolean[] retract = new boolean[versions.size()];
    for (int j = 0; j < retract.length; j++) {
      retract[j] = !isAdd(versions.get(j).getByte(kind));
    }
    for (int i = 0; i < out.length; i++) {
      if (aggs[i] == null) { // a key column (or the kind of t$audit_log): the newest input
        InternalRow last = versions.get(versions.size() - 1);
        values[i] = last.isNullAt(out[i]) ? null : last.get(out[i], outTypes[i]);
        if (keepDelete && out[i] == kind) {
          values[i] = (byte) 0;
        }
        continue;
      }
      Object[] in = new Object[versions.size()];
      for (int j = 0; j < in.length; j++) {
        InternalRow v = versions.get(j);
        in[j] = v.isNullAt(out[i]) ? null : v.get(out[i], outTypes[i]);
      }
      values[i] = aggs[i].fold(in, retract, errors);
    }
    return new GenericInternalRow(values);
  }

  /** One column's aggregate function (Paimon 0.9's Field*Agg; see aggregation.py). */
  static final class Agg implements Serializable {
    private static final long serialVersionUID = 1L;
    final String function;
    final String column;
    final DataType type;
    final boolean ignoreRetract;
    final String delimiter;
    private transient BaseOrdering ordering;

    Agg(String function, String column, DataType type, boolean ignoreRetract, String delimiter) {
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
        ordering = naturalOrdering(type);
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
}
