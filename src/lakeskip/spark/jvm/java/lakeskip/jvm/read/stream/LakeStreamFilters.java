package lakeskip.jvm.read.stream;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.StreamingDataSourceV2ScanRelation;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark pushes no filter into a streaming scan ({@code MicroBatchExecution}: "TODO: operator
 * pushdown"): this optimizer rule (of {@code LakeExtensions}) finds a filter right over a
 * lakeskip stream's micro-batch relation and hands its deterministic conjuncts to the stream
 * ({@link LakeMicroBatchStream#pushFilters}), which plans each batch's files with them. The
 * plan is returned unchanged: Spark still applies the filter to every row, so the files are
 * only pruned, never the answer changed.
 */
public final class LakeStreamFilters extends Rule<LogicalPlan> {
  /**
   * The rule for a session started without {@code LakeExtensions} (a catalog attached at run
   * time): one of its {@code experimental.extraOptimizations}, once.
   */
  public static void install(org.apache.spark.sql.SparkSession session) {
    org.apache.spark.sql.ExperimentalMethods exp = session.experimental();
    List<Rule<LogicalPlan>> all = new ArrayList<>();
    scala.collection.Iterator<Rule<LogicalPlan>> it = exp.extraOptimizations().iterator();
    while (it.hasNext()) {
      Rule<LogicalPlan> r = it.next();
      if (r instanceof LakeStreamFilters) {
        return;
      }
      all.add(r);
    }
    all.add(new LakeStreamFilters());
    exp.extraOptimizations_$eq(CollectionConverters.asScala(all).toList());
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (plan.isStreaming()) {
      visit(plan);
    }
    return plan;
  }

  private static void visit(LogicalPlan node) {
    if (node instanceof Filter) {
      Filter f = (Filter) node;
      if (f.child() instanceof StreamingDataSourceV2ScanRelation) {
        StreamingDataSourceV2ScanRelation r = (StreamingDataSourceV2ScanRelation) f.child();
        if (r.stream() instanceof LakeMicroBatchStream) {
          List<Expression> conjuncts = new ArrayList<>();
          split(f.condition(), conjuncts);
          ((LakeMicroBatchStream) r.stream())
              .pushFilters(CollectionConverters.asScala(conjuncts).toList());
        }
      }
    }
    for (LogicalPlan child : CollectionConverters.asJava(node.children())) {
      visit(child);
    }
  }

  private static void split(Expression e, List<Expression> out) {
    if (e instanceof And) {
      split(((And) e).left(), out);
      split(((And) e).right(), out);
    } else if (e.deterministic() && !SubqueryExpression.hasSubquery(e)) {
      out.add(e);
    }
  }
}
