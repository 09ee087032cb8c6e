package lakeskip.jvm.read.rules;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import lakeskip.jvm.catalog.LakeTable;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.EvalMode$;
import org.apache.spark.sql.catalyst.expressions.Exists;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.InSubquery;
import org.apache.spark.sql.catalyst.expressions.ListQuery;
import org.apache.spark.sql.catalyst.plans.Inner$;
import org.apache.spark.sql.catalyst.plans.JoinType;
import org.apache.spark.sql.catalyst.plans.LeftOuter$;
import org.apache.spark.sql.catalyst.plans.LeftSemi$;
import org.apache.spark.sql.catalyst.plans.RightOuter$;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.dynamicpruning.PartitionPruning$;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Runtime filters through a join whose key needs a widening cast. Spark compares an {@code INT}
 * fact key with a {@code BIGINT} dimension key as {@code CAST(f.k AS BIGINT) = d.k}; its
 * {@code PartitionPruning} then plans a dynamic pruning subquery on {@code CAST(f.k AS BIGINT)}
 * (the key's column is a filter attribute), but {@code DataSourceV2Strategy
 * .translateRuntimeFilterV2} hands a scan only an {@code IN} on a bare column, so the subquery
 * runs and the fact scan never receives its values.
 *
 * <p>This pre-CBO rule (of {@code LakeExtensions}) adds, next to each such conjunct
 * {@code CAST(a AS T) = b} of a join condition where {@code a} is a column of a lakeskip
 * table and the cast is lossless (every value of {@code a}'s type is exactly one value of
 * {@code T}: a wider integer, a decimal with room for every digit, {@code DOUBLE} from at most
 * {@code INT}), the conjunct {@code a = TRY_CAST(b AS typeof(a))}. The original implies it:
 * where {@code CAST(a AS T) = b}, {@code b} is exactly {@code a}'s value, which casts back to
 * {@code a}; elsewhere the original is false or NULL, so the added conjunct, true or not (TRY:
 * NULL where {@code b} does not fit, never an error), changes no row. Spark then plans the
 * runtime filter on the bare column {@code a} from the same broadcast, with the dimension's
 * keys cast back to {@code a}'s type. A lossy cast ({@code BIGINT} to {@code DOUBLE}: two
 * longs can share a double) gets nothing: there the cast-back value could differ from
 * {@code a} where the original holds.
 *
 * <p>The same for a predicate subquery, which is still an expression when pre-CBO rules run
 * (Spark's {@code RewritePredicateSubquery} makes it a LeftSemi join later): a conjunct
 * {@code CAST(a AS T) IN (SELECT b ...)} of a {@code Filter}, uncorrelated, gets
 * {@code a = TRY_CAST(b AS typeof(a))} as its subquery's join condition (the condition the
 * rewrite ANDs to the IN's equalities), and {@code EXISTS (SELECT ... WHERE CAST(a AS T) = b)}
 * gets it beside its pulled-up correlated condition. Only a positive conjunct: under NOT (an
 * anti join, whose left side Spark never prunes) or OR nothing is added, and neither where the
 * subquery's output shares an attribute with the outer plan (the rewrite would rename it).
 *
 * <p>It also keeps a dimension from taking the runtime filter away from its fact table.
 * {@code PartitionPruning} looks at each equi-join's left side first: when the left key is a
 * filter attribute of its scan and the right side holds a selective predicate anywhere, the
 * left scan is pruned by the right side's keys and the right side gets nothing from this join.
 * A lakeskip dimension clustered by its key declares that key (its files have disjoint ranges),
 * so {@code date_dim d JOIN store_sales s ON d.d_date_sk = s.ss_sold_date_sk} with a filter on
 * both sides prunes the few {@code date_dim} files by the fact's keys (a subquery over the
 * fact, kept only where the fact is broadcast) instead of the fact's files by the dimension's
 * dates. Where both keys come from lakeskip tables, both sides hold a selective predicate (so
 * Spark would prune either) and the left table has fewer rows than the right one, the left
 * relation is told not to offer that key ({@link #NO_RUNTIME_FILTER}, read by
 * {@code LakeScanBuilder}): Spark then prunes the larger right side. Fewer filter attributes
 * only mean fewer runtime filters, never another answer.
 */
public final class LakeJoinKeys extends Rule<LogicalPlan> {
  /** Relation option: columns its scan does not offer as runtime filter attributes (a,b). */
  public static final String NO_RUNTIME_FILTER = "__lakeskip.no-runtime-filter";


  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    LogicalPlan out = rewrite(plan);
    Map<LogicalPlan, Set<String>> yielding = new IdentityHashMap<>();
    collectYielding(out, yielding);
    return yielding.isEmpty() ? out : withoutAttributes(out, yielding);
  }

  /** The lakeskip relations that should not offer a join key (see the class comment). */
  private static void collectYielding(LogicalPlan node, Map<LogicalPlan, Set<String>> out) {
    for (LogicalPlan c : CollectionConverters.asJava(node.children())) {
      collectYielding(c, out);
    }
    if (!(node instanceof Join)) {
      return;
    }
    Join j = (Join) node;
    if (j.joinType() != Inner$.MODULE$ || j.condition().isEmpty()) {
      return;
    }
    List<Expression> conjuncts = new ArrayList<>();
    split(j.condition().get(), conjuncts);
    Boolean selective = null;
    for (Expression c : conjuncts) {
      if (!(c instanceof EqualTo)) {
        continue;
      }
      EqualTo eq = (EqualTo) c;
      Expression l = eq.left();
      Expression r = eq.right();
      if (!within(l, j.left())) {
        l = eq.right();
        r = eq.left();
      }
      if (!within(l, j.left()) || !within(r, j.right())) {
        continue;
      }
      Tuple2<Expression, LogicalPlan> left = lakeSource(l, j.left());
      Tuple2<Expression, LogicalPlan> right = lakeSource(r, j.right());
      if (left == null || right == null || !(left._1() instanceof AttributeReference)) {
        continue;
      }
      Long leftRows = ((LakeTable) ((DataSourceV2Relation) left._2()).table()).recordCount;
      Long rightRows = ((LakeTable) ((DataSourceV2Relation) right._2()).table()).recordCount;
      if (leftRows == null || rightRows == null || leftRows >= rightRows) {
        continue;
      }
      if (selective == null) {
        selective = hasSelectivePredicate(j.left()) && hasSelectivePredicate(j.right());
      }
      if (selective) {
        out.computeIfAbsent(left._2(), k -> new HashSet<>())
            .add(((AttributeReference) left._1()).name());
      }
    }
  }

  /** {@code plan} with each of {@code yielding}'s relations told not to offer its keys. */
  private static LogicalPlan withoutAttributes(
      LogicalPlan node, Map<LogicalPlan, Set<String>> yielding) {
    Set<String> columns = yielding.get(node);
    if (columns != null) {
      DataSourceV2Relation rel = (DataSourceV2Relation) node;
      Map<String, String> options = new HashMap<>(rel.options().asCaseSensitiveMap());
      String had = options.get(NO_RUNTIME_FILTER);
      Set<String> all = new TreeSet<>(columns);
      if (had != null && !had.isEmpty()) {
        all.addAll(Arrays.asList(had.split(",")));
      }
      options.put(NO_RUNTIME_FILTER, String.join(",", all));
      LogicalPlan copy = rel.copy(rel.table(), rel.output(), rel.catalog(), rel.identifier(),
          new CaseInsensitiveStringMap(options), rel.timeTravelSpec());
      copy.copyTagsFrom(rel);
      return copy;
    }
    boolean changed = false;
    List<LogicalPlan> children = new ArrayList<>();
    for (LogicalPlan c : CollectionConverters.asJava(node.children())) {
      LogicalPlan r = withoutAttributes(c, yielding);
      changed |= r != c;
      children.add(r);
    }
    return changed ? node.withNewChildren(CollectionConverters.asScala(children).toSeq()) : node;
  }

  /** Spark's {@code PartitionPruning.hasSelectivePredicate}: a likely selective filter. */
  private static boolean hasSelectivePredicate(LogicalPlan node) {
    if (node instanceof Filter
        && PartitionPruning$.MODULE$.isLikelySelective(((Filter) node).condition())) {
      return true;
    }
    for (LogicalPlan c : CollectionConverters.asJava(node.children())) {
      if (hasSelectivePredicate(c)) {
        return true;
      }
    }
    return false;
  }

  /** Where {@code e} comes from under {@code plan} when that is a lakeskip table's relation
   * with its row count known (the expression there and the relation), else null. */
  private static Tuple2<Expression, LogicalPlan> lakeSource(Expression e, LogicalPlan plan) {
    Option<Tuple2<Expression, LogicalPlan>> found =
        PartitionPruning$.MODULE$.findExpressionAndTrackLineageDown(e, plan);
    if (found.isEmpty()) {
      return null;
    }
    LogicalPlan leaf = found.get()._2();
    return leaf instanceof DataSourceV2Relation
        && ((DataSourceV2Relation) leaf).table() instanceof LakeTable ? found.get() : null;
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
    if (out instanceof Join) {
      Join j = (Join) out;
      Expression cond = withUncastKeys(j);
      if (cond != null) {
        return j.copy(j.left(), j.right(), j.joinType(), Option.apply(cond), j.hint());
      }
    }
    if (out instanceof Filter) {
      Filter f = (Filter) out;
      Expression cond = withUncastSubqueryKeys(f);
      if (cond != null) {
        return new Filter(cond, f.child());
      }
    }
    return out;
  }

  /** The filter's condition with its IN / EXISTS subqueries' uncast keys, or null: none. */
  private static Expression withUncastSubqueryKeys(Filter f) {
    List<Expression> conjuncts = new ArrayList<>();
    split(f.condition(), conjuncts);
    boolean changed = false;
    Expression out = null;
    for (Expression c : conjuncts) {
      Expression r = c;
      if (c instanceof InSubquery) {
        r = uncastIn((InSubquery) c, f.child());
      } else if (c instanceof Exists) {
        r = uncastExists((Exists) c, f.child());
      }
      changed |= r != c;
      out = out == null ? r : new And(out, r);
    }
    return changed ? out : null;
  }

  /** {@code in} with its subquery's join condition holding the uncast keys (see the class
   * comment), or {@code in} itself: nothing to add. */
  private static Expression uncastIn(InSubquery in, LogicalPlan outer) {
    ListQuery q = in.query();
    LogicalPlan sub = q.plan();
    if (!q.outerAttrs().isEmpty() || !q.joinCond().isEmpty() || shareAttributes(outer, sub)) {
      return in;
    }
    List<Expression> values = CollectionConverters.asJava(in.values());
    List<Attribute> outputs = CollectionConverters.asJava(sub.output());
    if (values.size() > outputs.size()) {
      return in;
    }
    List<Expression> equalities = new ArrayList<>();
    for (int i = 0; i < values.size(); i++) {
      equalities.add(new EqualTo(values.get(i), outputs.get(i)));
    }
    List<Expression> added = uncastConjuncts(equalities, outer, sub, true);
    if (added.isEmpty()) {
      return in;
    }
    ListQuery withKeys = new ListQuery(sub, q.outerAttrs(), q.exprId(), q.numCols(),
        CollectionConverters.asScala(added).toSeq(), q.hint());
    return new InSubquery(in.values(), withKeys);
  }

  /** {@code e} with the uncast keys beside its correlated condition, or {@code e} itself. */
  private static Expression uncastExists(Exists e, LogicalPlan outer) {
    if (e.joinCond().isEmpty() || shareAttributes(outer, e.plan())) {
      return e;
    }
    List<Expression> conds = new ArrayList<>();
    for (Expression c : CollectionConverters.asJava(e.joinCond())) {
      split(c, conds);
    }
    List<Expression> added = uncastConjuncts(conds, outer, e.plan(), true);
    if (added.isEmpty()) {
      return e;
    }
    List<Expression> all = new ArrayList<>(CollectionConverters.asJava(e.joinCond()));
    all.addAll(added);
    return new Exists(e.plan(), e.outerAttrs(), e.exprId(),
        CollectionConverters.asScala(all).toSeq(), e.hint());
  }

  /** Whether the subquery's output shares an attribute with the outer plan's. */
  private static boolean shareAttributes(LogicalPlan outer, LogicalPlan sub) {
    return !outer.outputSet().intersect(sub.outputSet()).isEmpty();
  }

  /** The join's condition with the uncast key conjuncts added, or null: nothing to add. */
  private static Expression withUncastKeys(Join j) {
    JoinType type = j.joinType();
    if (j.condition().isEmpty()
        || !(type == Inner$.MODULE$ || type == LeftSemi$.MODULE$
            || type == LeftOuter$.MODULE$ || type == RightOuter$.MODULE$)) {
      return null;
    }
    Expression cond = j.condition().get();
    List<Expression> conjuncts = new ArrayList<>();
    split(cond, conjuncts);
    List<Expression> added = uncastConjuncts(conjuncts, j.left(), j.right(), false);
    if (added.isEmpty()) {
      return null;
    }
    Expression out = cond;
    for (Expression a : added) {
      out = new And(out, a);
    }
    return out;
  }

  /**
   * For each conjunct {@code CAST(a AS T) = b} (either way round) between {@code left} and
   * {@code right} where {@code a} is a lakeskip table's column and the cast lossless: the
   * implied {@code a = TRY_CAST(b AS typeof(a))}, unless {@code conjuncts} hold it already.
   * {@code leftOnly}: only where {@code a} comes from {@code left} (a subquery's outer plan).
   */
  private static List<Expression> uncastConjuncts(
      List<Expression> conjuncts, LogicalPlan left, LogicalPlan right, boolean leftOnly) {
    List<Expression> added = new ArrayList<>();
    for (Expression c : conjuncts) {
      if (!(c instanceof EqualTo)) {
        continue;
      }
      EqualTo eq = (EqualTo) c;
      Expression[][] orders = {{eq.left(), eq.right()}, {eq.right(), eq.left()}};
      for (Expression[] o : orders) {
        Expression column = losslessCastColumn(o[0]);
        Expression other = o[1];
        if (column == null || !other.deterministic()) {
          continue;
        }
        LogicalPlan side;
        if (within(column, left) && within(other, right)) {
          side = left;
        } else if (!leftOnly && within(column, right) && within(other, left)) {
          side = right;
        } else {
          continue;
        }
        if (!ofLakeTable(column, side)) {
          continue;
        }
        Expression back = new Cast(other, column.dataType(),
            Option.apply(SQLConf.get().sessionLocalTimeZone()), EvalMode$.MODULE$.TRY());
        Expression add = new EqualTo(column, back);
        if (!containsSemantic(conjuncts, add) && !containsSemantic(added, add)) {
          added.add(add);
        }
      }
    }
    return added;
  }

  /** {@code e}'s column when {@code e} is a lossless cast of a column, else null. */
  private static Expression losslessCastColumn(Expression e) {
    if (!(e instanceof Cast) || !(((Cast) e).child() instanceof AttributeReference)) {
      return null;
    }
    Expression column = ((Cast) e).child();
    return lossless(column.dataType(), e.dataType()) ? column : null;
  }

  /** Whether every value of {@code from} is exactly one value of {@code to}. */
  static boolean lossless(DataType from, DataType to) {
    int digits = integerDigits(from);
    if (digits > 0) {
      int toDigits = integerDigits(to);
      if (toDigits > 0) {
        return toDigits >= digits;
      }
      if (to instanceof DecimalType) {
        DecimalType d = (DecimalType) to;
        return d.precision() - d.scale() >= digits;
      }
      if (to instanceof DoubleType) {
        return digits <= 10;  // byte, short, int: below 2^53
      }
      if (to instanceof FloatType) {
        return digits <= 5;  // byte, short: below 2^24
      }
      return false;
    }
    if (from instanceof DecimalType && to instanceof DecimalType) {
      DecimalType a = (DecimalType) from;
      DecimalType b = (DecimalType) to;
      return b.scale() >= a.scale() && b.precision() - b.scale() >= a.precision() - a.scale();
    }
    return false;
  }

  /** Decimal digits an integer type needs (its width's rank), 0 for other types. */
  private static int integerDigits(DataType t) {
    if (t instanceof ByteType) {
      return 3;
    }
    if (t instanceof ShortType) {
      return 5;
    }
    if (t instanceof IntegerType) {
      return 10;
    }
    if (t instanceof LongType) {
      return 19;
    }
    return 0;
  }

  private static boolean within(Expression e, LogicalPlan plan) {
    return !e.references().isEmpty() && e.references().subsetOf(plan.outputSet());
  }

  /** Whether {@code column} comes from a lakeskip table's relation under {@code plan}. */
  private static boolean ofLakeTable(Expression column, LogicalPlan plan) {
    return lakeSource(column, plan) != null;
  }

  private static boolean containsSemantic(List<Expression> all, Expression e) {
    for (Expression x : all) {
      if (x.semanticEquals(e)) {
        return true;
      }
    }
    return false;
  }

  private static void split(Expression e, List<Expression> out) {
    if (e instanceof And) {
      split(((And) e).left(), out);
      split(((And) e).right(), out);
    } else {
      out.add(e);
    }
  }
}
