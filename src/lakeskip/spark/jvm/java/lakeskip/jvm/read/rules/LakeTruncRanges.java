package lakeskip.jvm.read.rules;

import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.time.temporal.IsoFields;
import java.time.temporal.TemporalAdjusters;
import java.time.zone.ZoneOffsetTransition;
import java.time.zone.ZoneRules;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import lakeskip.jvm.catalog.LakeTable;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BinaryComparison;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.InSet;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression$;
import org.apache.spark.sql.catalyst.expressions.TruncTimestamp;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.TimestampNTZType$;
import org.apache.spark.sql.types.TimestampType$;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code date_trunc(unit, ts) op T} as a range of {@code ts} beside it. Spark pushes no
 * {@code date_trunc} to a scan (its V2 expression builder has no translation for
 * {@code TruncTimestamp}), so neither lakeskip's planner nor Parquet's row-group filter sees it
 * and every file is read. This pre-CBO rule of {@code LakeExtensions}, run once right before
 * Spark's scan push-down, finds a filter right over a lakeskip table's relation whose
 * conjuncts compare {@code date_trunc(unit, c)} ({@code c} a TIMESTAMP column, or a
 * TIMESTAMP_NTZ one Spark casts for it; {@code unit} one of MICROSECOND .. YEAR) with a
 * timestamp literal ({@code = <=> < <= > >=}, {@code IN}; a {@code BETWEEN} is two of them),
 * and adds {@code c >= lo AND c < hi} (or one side, or an
 * {@code OR} of ranges for an {@code IN}) to the filter. The original predicate stays: Spark
 * still evaluates it on every row, so the added range only has to hold on every row the
 * original selects (it does not replace it).
 *
 * <p>The range: in the session time zone (the expression's own), the unit holding {@code T}
 * starts at {@code S} and the next at {@code N}; {@code date_trunc = T} holds within {@code
 * [S, N)}, {@code < T} below {@code T} (a unit start) or {@code N}, {@code <= T} below {@code N},
 * {@code > T} from {@code N}, {@code >= T} from {@code T} (a unit start) or {@code N}. That is
 * exact in a zone of one fixed offset. In a zone with offset changes truncation is not quite
 * monotone (a clock set back repeats local times), so every bound is widened by {@link
 * #MARGIN_SECONDS} or by twice the largest offset change within two days of it plus an hour,
 * whichever is more (as lakeskip's own function ranges widen theirs). Anything the rule does
 * not understand, or a bound past the type's range, adds nothing.
 */
public final class LakeTruncRanges extends Rule<LogicalPlan> {
  /** The widening of a bound in a zone with offset changes (Python's {@code ZONE_MARGIN}). */
  static final long MARGIN_SECONDS = 3 * 3600;

  /** Offset changes looked for this far either side of a bound. */
  private static final long WINDOW_SECONDS = 2 * 86400;

  /** An {@code IN} list longer than this becomes one range from its least to its greatest. */
  private static final int MAX_IN_RANGES = 32;


  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return rewrite(plan);
  }

  private static LogicalPlan rewrite(LogicalPlan node) {
    boolean changed = false;
    List<LogicalPlan> children = new ArrayList<>();
    for (LogicalPlan c : CollectionConverters.asJava(node.children())) {
      LogicalPlan r = rewrite(c);
      changed |= r != c;
      children.add(r);
    }
    LogicalPlan out =
        changed ? node.withNewChildren(CollectionConverters.asScala(children).toSeq()) : node;
    if (out instanceof Filter) {
      LogicalPlan f = withRanges((Filter) out);
      if (f != null) {
        return f;
      }
    }
    return out;
  }

  /** {@code filter} with the ranges its conjuncts imply, or null when there are none. */
  private static LogicalPlan withRanges(Filter filter) {
    Expression cond = filter.condition();
    if (!(filter.child() instanceof DataSourceV2Relation)
        || !(((DataSourceV2Relation) filter.child()).table() instanceof LakeTable)
        || !cond.deterministic()
        || SubqueryExpression$.MODULE$.hasSubquery(cond)) {
      return null;
    }
    List<Expression> conjuncts = new ArrayList<>();
    split(cond, conjuncts);
    List<Expression> added = new ArrayList<>();
    for (Expression c : conjuncts) {
      Expression d = derive(c);
      if (d == null) {
        continue;
      }
      boolean present = false;
      for (Expression e : conjuncts) {
        present |= e.semanticEquals(d);
      }
      for (Expression e : added) {
        present |= e.semanticEquals(d);
      }
      if (!present) {
        added.add(d);
      }
    }
    if (added.isEmpty()) {
      return null;
    }
    Expression all = cond;
    for (Expression d : added) {
      all = new And(all, d);
    }
    return new Filter(all, filter.child());
  }

  private static void split(Expression e, List<Expression> out) {
    if (e instanceof And) {
      split(((And) e).left(), out);
      split(((And) e).right(), out);
    } else {
      out.add(e);
    }
  }

  /** The comparison operators, seen with the {@code date_trunc} on the left. */
  private enum Op {
    EQ, LT, LE, GT, GE;

    Op flipped() {
      switch (this) {
        case LT: return GT;
        case LE: return GE;
        case GT: return LT;
        case GE: return LE;
        default: return this;
      }
    }
  }

  private static Op op(Expression e) {
    if (e instanceof EqualTo || e instanceof EqualNullSafe) {
      return Op.EQ;
    }
    if (e instanceof LessThan) {
      return Op.LT;
    }
    if (e instanceof LessThanOrEqual) {
      return Op.LE;
    }
    if (e instanceof GreaterThan) {
      return Op.GT;
    }
    if (e instanceof GreaterThanOrEqual) {
      return Op.GE;
    }
    return null;
  }

  /** The range of the column one conjunct implies, or null. */
  static Expression derive(Expression c) {
    try {
      if (c instanceof BinaryComparison) {
        Op op = op(c);
        BinaryComparison b = (BinaryComparison) c;
        if (op == null) {
          return null;
        }
        if (b.left() instanceof TruncTimestamp) {
          return range((TruncTimestamp) b.left(), op, micros(b.right()));
        }
        if (b.right() instanceof TruncTimestamp) {
          return range((TruncTimestamp) b.right(), op.flipped(), micros(b.left()));
        }
        return null;
      }
      List<Long> values = new ArrayList<>();
      TruncTimestamp t;
      if (c instanceof In && ((In) c).value() instanceof TruncTimestamp) {
        t = (TruncTimestamp) ((In) c).value();
        for (Expression e : CollectionConverters.asJava(((In) c).list())) {
          if (!(e instanceof Literal)) {
            return null;
          }
          Long v = micros(e);
          if (v != null) { // a NULL in the list selects no row
            values.add(v);
          }
        }
      } else if (c instanceof InSet && ((InSet) c).child() instanceof TruncTimestamp) {
        t = (TruncTimestamp) ((InSet) c).child();
        for (Object v : CollectionConverters.asJava(((InSet) c).hset())) {
          if (v instanceof Long) {
            values.add((Long) v);
          } else if (v != null) {
            return null;
          }
        }
      } else {
        return null;
      }
      return inRanges(t, values);
    } catch (ArithmeticException | java.time.DateTimeException e) {
      return null; // a bound past the type's range: nothing added
    }
  }

  private static Long micros(Expression e) {
    if (!(e instanceof Literal) || ((Literal) e).dataType() != TimestampType$.MODULE$) {
      return null;
    }
    Object v = ((Literal) e).value();
    return v instanceof Long ? (Long) v : null;
  }

  /**
   * The column {@code date_trunc} truncates: a TIMESTAMP column, or a TIMESTAMP_NTZ column
   * Spark casts to TIMESTAMP for it (in the session time zone); or null.
   */
  private static AttributeReference column(TruncTimestamp t) {
    Expression e = t.timestamp();
    if (e instanceof Cast && ((Cast) e).child() instanceof AttributeReference
        && ((Cast) e).child().dataType() == TimestampNTZType$.MODULE$
        && e.dataType() == TimestampType$.MODULE$) {
      return (AttributeReference) ((Cast) e).child();
    }
    if (e instanceof AttributeReference && e.dataType() == TimestampType$.MODULE$) {
      return (AttributeReference) e;
    }
    return null;
  }

  private static Unit unit(TruncTimestamp t) {
    if (!(t.format() instanceof Literal) || ((Literal) t.format()).value() == null) {
      return null;
    }
    return Unit.parse(((Literal) t.format()).value().toString());
  }

  private static Expression inRanges(TruncTimestamp t, List<Long> values) {
    if (values.isEmpty()) {
      return null;
    }
    TreeSet<Long> sorted = new TreeSet<>(values);
    if (sorted.size() > MAX_IN_RANGES) {
      Expression lo = range(t, Op.GE, sorted.first());
      Expression hi = range(t, Op.LE, sorted.last());
      return lo == null || hi == null ? null : new And(lo, hi);
    }
    Expression out = null;
    for (Long v : sorted) {
      Expression r = range(t, Op.EQ, v);
      if (r == null) {
        return null;
      }
      out = out == null ? r : new Or(out, r);
    }
    return out;
  }

  /** {@code date_trunc(unit, c) op value} as a range of {@code c}, or null. */
  private static Expression range(TruncTimestamp t, Op op, Long value) {
    AttributeReference col = column(t);
    Unit unit = unit(t);
    if (col == null || unit == null || value == null) {
      return null;
    }
    ZoneId zone = t.zoneId();
    long[] b = bounds(unit, zone, value);
    long start = b[0];
    long next = b[1];
    long margin = b[2];
    boolean isStart = start == value;
    Bound on = new Bound(col, zone);
    switch (op) {
      case EQ:
        return new And(on.ge(Math.subtractExact(start, margin)),
            on.lt(Math.addExact(next, margin)));
      case LT:
        return on.lt(Math.addExact(isStart ? start : next, margin));
      case LE:
        return on.lt(Math.addExact(next, margin));
      case GT:
        return on.ge(Math.subtractExact(next, margin));
      case GE:
        return on.ge(Math.subtractExact(isStart ? start : next, margin));
      default:
        return null;
    }
  }

  /**
   * Comparisons of the column with an instant (microseconds). A TIMESTAMP_NTZ column holds
   * local times, which Spark casts to instants in the session zone ({@code instant = local -
   * offset}): an instant at or after {@code x} is a local time at or after {@code x} plus the
   * least offset near {@code x}, one before {@code x} a local time before {@code x} plus the
   * greatest.
   */
  private static final class Bound {
    private final AttributeReference col;
    private final ZoneId zone;
    private final boolean local;

    Bound(AttributeReference col, ZoneId zone) {
      this.col = col;
      this.zone = zone;
      this.local = col.dataType() == TimestampNTZType$.MODULE$;
    }

    Expression ge(long micros) {
      long v = local ? Math.addExact(micros, offsets(zone.getRules(), micros)[0] * 1_000_000L)
          : micros;
      return new GreaterThanOrEqual(col, literal(v));
    }

    Expression lt(long micros) {
      long v = local ? Math.addExact(micros, offsets(zone.getRules(), micros)[1] * 1_000_000L)
          : micros;
      return new LessThan(col, literal(v));
    }

    private Literal literal(long v) {
      return new Literal(v, local ? TimestampNTZType$.MODULE$ : TimestampType$.MODULE$);
    }
  }

  /** Spark's {@code date_trunc} units ({@code DateTimeUtils.parseTruncLevel}). */
  enum Unit {
    MICROSECOND, MILLISECOND, SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, QUARTER, YEAR;

    static Unit parse(String s) {
      switch (s.toUpperCase(Locale.ROOT)) {
        case "MICROSECOND": return MICROSECOND;
        case "MILLISECOND": return MILLISECOND;
        case "SECOND": return SECOND;
        case "MINUTE": return MINUTE;
        case "HOUR": return HOUR;
        case "DAY": case "DD": return DAY;
        case "WEEK": return WEEK;
        case "MON": case "MONTH": case "MM": return MONTH;
        case "QUARTER": return QUARTER;
        case "YEAR": case "YYYY": case "YY": return YEAR;
        default: return null;
      }
    }
  }

  /**
   * {@code {S, N, margin}} in microseconds: where the unit holding {@code value} starts in
   * {@code zone}, where the next one starts, and how far to widen bounds there.
   */
  static long[] bounds(Unit unit, ZoneId zone, long value) {
    switch (unit) {
      case MICROSECOND:
        return new long[] {value, Math.addExact(value, 1), 0};
      case MILLISECOND:
        return fixed(value, 1_000L);
      case SECOND:
        return fixed(value, 1_000_000L);
      default:
        break;
    }
    Instant at = Instant.ofEpochSecond(
        Math.floorDiv(value, 1_000_000L), Math.floorMod(value, 1_000_000L) * 1_000L);
    LocalDateTime local = LocalDateTime.ofInstant(at, zone);
    LocalDateTime first;
    LocalDateTime after;
    switch (unit) {
      case MINUTE:
        first = local.truncatedTo(ChronoUnit.MINUTES);
        after = first.plusMinutes(1);
        break;
      case HOUR:
        first = local.truncatedTo(ChronoUnit.HOURS);
        after = first.plusHours(1);
        break;
      case DAY:
        first = local.truncatedTo(ChronoUnit.DAYS);
        after = first.plusDays(1);
        break;
      case WEEK: {
        LocalDate d = local.toLocalDate().with(TemporalAdjusters.previousOrSame(
            java.time.DayOfWeek.MONDAY));
        first = d.atStartOfDay();
        after = d.plusWeeks(1).atStartOfDay();
        break;
      }
      case MONTH: {
        LocalDate d = local.toLocalDate().withDayOfMonth(1);
        first = d.atStartOfDay();
        after = d.plusMonths(1).atStartOfDay();
        break;
      }
      case QUARTER: {
        LocalDate d = local.toLocalDate().with(IsoFields.DAY_OF_QUARTER, 1);
        first = d.atStartOfDay();
        after = d.plusMonths(3).atStartOfDay();
        break;
      }
      case YEAR: {
        LocalDate d = local.toLocalDate().withDayOfYear(1);
        first = d.atStartOfDay();
        after = d.plusYears(1).atStartOfDay();
        break;
      }
      default:
        throw new IllegalStateException(unit.name());
    }
    long s = toMicros(ZonedDateTime.of(first, zone).toInstant());
    long n = toMicros(ZonedDateTime.of(after, zone).toInstant());
    return new long[] {s, n, margin(zone, s, n)};
  }

  private static long[] fixed(long value, long unit) {
    long s = Math.subtractExact(value, Math.floorMod(value, unit));
    return new long[] {s, Math.addExact(s, unit), 0};
  }

  private static long toMicros(Instant i) {
    return Math.addExact(Math.multiplyExact(i.getEpochSecond(), 1_000_000L), i.getNano() / 1_000L);
  }

  /** 0 in a zone of one fixed offset; else the widening of bounds at {@code s} and {@code n}. */
  static long margin(ZoneId zone, long s, long n) {
    ZoneRules rules = zone.getRules();
    if (rules.isFixedOffset()) {
      return 0;
    }
    long spread = Math.max(spread(rules, s), spread(rules, n));
    return Math.max(MARGIN_SECONDS, 2 * spread + 3600) * 1_000_000L;
  }

  /** The largest offset minus the least within {@link #WINDOW_SECONDS} of {@code micros}. */
  private static long spread(ZoneRules rules, long micros) {
    int[] o = offsets(rules, micros);
    return o[1] - o[0];
  }

  /** The least and the greatest offset (seconds) within {@link #WINDOW_SECONDS} of a time. */
  static int[] offsets(ZoneRules rules, long micros) {
    long sec = Math.floorDiv(micros, 1_000_000L);
    Instant from = Instant.ofEpochSecond(Math.subtractExact(sec, WINDOW_SECONDS));
    Instant to = Instant.ofEpochSecond(Math.addExact(sec, WINDOW_SECONDS));
    int lo = rules.getOffset(from).getTotalSeconds();
    int hi = lo;
    ZoneOffsetTransition tr = rules.nextTransition(from);
    for (int i = 0; tr != null && !tr.getInstant().isAfter(to) && i < 64; i++) {
      for (ZoneOffset o : new ZoneOffset[] {tr.getOffsetBefore(), tr.getOffsetAfter()}) {
        lo = Math.min(lo, o.getTotalSeconds());
        hi = Math.max(hi, o.getTotalSeconds());
      }
      tr = rules.nextTransition(tr.getInstant());
    }
    return new int[] {lo, hi};
  }
}
