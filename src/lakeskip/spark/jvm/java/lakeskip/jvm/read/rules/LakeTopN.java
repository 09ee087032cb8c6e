package lakeskip.jvm.read.rules;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.catalog.LakeTable;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NullsFirst$;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression$;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.GlobalLimit;
import org.apache.spark.sql.catalyst.plans.logical.LocalLimit;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Sort;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.IntegerType$;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code ORDER BY c LIMIT k} over a filter on a lakeskip table's rows. Spark pushes a top-N
 * into a scan only when no filter stays above it ({@code V2ScanRelationPushDown.pushDownLimit}),
 * and a filter on data columns always stays (Spark filters the rows; Parquet only skips row
 * groups). This pre-CBO rule of {@code LakeExtensions}, run once right before Spark's scan
 * push-down, finds {@code GlobalLimit(k, LocalLimit(k, Sort(c, ..., Filter(cond, relation))))}
 * (projections between them allowed, {@code c} a column of the relation, {@code cond}
 * deterministic and free of subqueries, so every conjunct reaches the scan builder) and hands
 * the top-N to the relation's scan builder in its options ({@link #OPTION}). The scan builder
 * sends it to {@code plan_scan} with the filters; Python counts towards the limit only files
 * whose every row the filters hold on ({@code lakeskip.planner.top_n}). The plan's operators
 * are unchanged: Spark still filters, sorts and limits the rows read.
 */
public final class LakeTopN extends Rule<LogicalPlan> {
  /** The relation option carrying the top-N (JSON: {@code limit}, {@code order}). */
  public static final String OPTION = "__lakeskip.top-n";


  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return rewrite(plan);
  }

  private static LogicalPlan rewrite(LogicalPlan node) {
    LogicalPlan top = topN(node);
    if (top != null) {
      return top;
    }
    boolean changed = false;
    List<LogicalPlan> children = new ArrayList<>();
    for (LogicalPlan c : CollectionConverters.asJava(node.children())) {
      LogicalPlan r = rewrite(c);
      changed |= r != c;
      children.add(r);
    }
    return changed ? node.withNewChildren(CollectionConverters.asScala(children).toSeq()) : node;
  }

  /** {@code node} with the top-N in its relation's options, or null where it does not fit. */
  private static LogicalPlan topN(LogicalPlan node) {
    if (!(node instanceof GlobalLimit)) {
      return null;
    }
    GlobalLimit global = (GlobalLimit) node;
    Integer k = intLiteral(global.limitExpr());
    if (k == null || !(global.child() instanceof LocalLimit)
        || !k.equals(intLiteral(((LocalLimit) global.child()).limitExpr()))) {
      return null;
    }
    // the nodes from the LocalLimit down to the Filter, each with one child
    List<LogicalPlan> path = new ArrayList<>();
    path.add(global.child());
    LogicalPlan at = ((LocalLimit) global.child()).child();
    Sort sort = null;
    while (at instanceof Project || (sort == null && at instanceof Sort)) {
      if (at instanceof Sort) {
        sort = (Sort) at;
      }
      path.add(at);
      at = at.children().head();
    }
    if (sort == null || !sort.global() || !(at instanceof Filter)) {
      return null;
    }
    Filter filter = (Filter) at;
    Expression cond = filter.condition();
    if (!cond.deterministic() || SubqueryExpression$.MODULE$.hasSubquery(cond)
        || !(filter.child() instanceof DataSourceV2Relation)) {
      return null;
    }
    DataSourceV2Relation rel = (DataSourceV2Relation) filter.child();
    if (!(rel.table() instanceof LakeTable) || sort.order().isEmpty()) {
      return null;
    }
    SortOrder first = sort.order().head();
    if (!(first.child() instanceof AttributeReference)) {
      return null;
    }
    AttributeReference key = (AttributeReference) first.child();
    String column = null;
    for (Attribute a : CollectionConverters.asJava(rel.output())) {
      if (a.exprId().equals(key.exprId())) {
        column = a.name();
      }
    }
    if (column == null) {
      return null;
    }
    ObjectNode topN = Bridge.JSON.createObjectNode();
    topN.put(Key.LIMIT, k);
    ObjectNode order = topN.putArray(Key.ORDER).addObject();
    order.put(Key.COLUMN, column);
    order.put(Key.DESCENDING, !first.isAscending());
    order.put(Key.NULLS_FIRST, first.nullOrdering() == NullsFirst$.MODULE$);
    Map<String, String> options = new HashMap<>(rel.options().asCaseSensitiveMap());
    options.put(OPTION, topN.toString());
    LogicalPlan child = rel.copy(rel.table(), rel.output(), rel.catalog(), rel.identifier(),
        new CaseInsensitiveStringMap(options), rel.timeTravelSpec());
    child.copyTagsFrom(rel);
    child = filter.withNewChildren(CollectionConverters.asScala(List.of(child)).toSeq());
    for (int i = path.size() - 1; i >= 0; i--) {
      child = path.get(i).withNewChildren(CollectionConverters.asScala(List.of(child)).toSeq());
    }
    return global.withNewChildren(CollectionConverters.asScala(List.of(child)).toSeq());
  }

  private static Integer intLiteral(Expression e) {
    if (e instanceof Literal && ((Literal) e).dataType() == IntegerType$.MODULE$
        && ((Literal) e).value() != null) {
      return (Integer) ((Literal) e).value();
    }
    return null;
  }
}
