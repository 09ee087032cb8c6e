package lakeskip.jvm.read.aggregate;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.execution.datasources.v2.V2CommandExec;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A completely pushed aggregate answered from the manifests ({@link LakeAggregateScan}) with
 * the projection Spark puts over it ({@code Project [count#1 AS count(1)#2]}) evaluated at
 * planning: the rows are returned on the driver ({@code executeCollect}), so {@code SELECT
 * count(*)} runs no Spark job. Spark's own plan for a {@code LocalScan} is a local table scan
 * under a project, which runs one single-task job. Planned by {@code LakeDmlStrategy} (the
 * session extension and the run-time install alike); a projection that cannot be evaluated
 * on the driver (a subquery, a nondeterministic or failing expression) is left to Spark.
 */
public final class LakeAggregateExec extends V2CommandExec {
  private final String description;
  private final scala.collection.immutable.Seq<Attribute> output;
  private final scala.collection.immutable.Seq<InternalRow> rows;

  /** Public, with the product elements as arguments: Spark copies plan nodes reflectively. */
  public LakeAggregateExec(String description, scala.collection.immutable.Seq<Attribute> output,
      scala.collection.immutable.Seq<InternalRow> rows) {
    this.description = description;
    this.output = output;
    this.rows = rows;
  }

  /** The exec for {@code plan} when it projects a pushed aggregate's answer, else null. */
  @SuppressWarnings("unchecked")
  public static SparkPlan plan(LogicalPlan plan) {
    if (plan instanceof DataSourceV2ScanRelation  // GROUP BY p with no aggregate: no projection
        && ((DataSourceV2ScanRelation) plan).scan() instanceof LakeAggregateScan) {
      DataSourceV2ScanRelation relation = (DataSourceV2ScanRelation) plan;
      List<InternalRow> rows = new ArrayList<>();
      for (InternalRow r : ((LakeAggregateScan) relation.scan()).rows()) {
        rows.add(r);
      }
      return new LakeAggregateExec(relation.scan().description(),
          (scala.collection.immutable.Seq<Attribute>) (Object) relation.output(),
          CollectionConverters.asScala(rows).toList());
    }
    if (!(plan instanceof Project) || !(((Project) plan).child() instanceof DataSourceV2ScanRelation)) {
      return null;
    }
    Project project = (Project) plan;
    DataSourceV2ScanRelation relation = (DataSourceV2ScanRelation) project.child();
    if (!(relation.scan() instanceof LakeAggregateScan)) {
      return null;
    }
    List<Expression> exprs = new ArrayList<>();
    List<Attribute> out = new ArrayList<>();
    for (NamedExpression named : CollectionConverters.asJava(project.projectList())) {
      Expression e = (Expression) named;
      if (!e.deterministic() || SubqueryExpression.hasSubquery(e)) {
        return null;
      }
      exprs.add(e);
      out.add(named.toAttribute());
    }
    List<InternalRow> rows = new ArrayList<>();
    try {
      UnsafeProjection p = UnsafeProjection.create(
          CollectionConverters.asScala(exprs).toList(),
          (scala.collection.immutable.Seq<Attribute>) (Object) relation.output());
      for (InternalRow r : ((LakeAggregateScan) relation.scan()).rows()) {
        rows.add(p.apply(r).copy());
      }
    } catch (RuntimeException e) {  // e.g. an ANSI overflow: Spark plans it and raises it
      return null;
    }
    return new LakeAggregateExec(relation.scan().description(),
        CollectionConverters.asScala(out).toList(), CollectionConverters.asScala(rows).toList());
  }

  @Override
  public scala.collection.immutable.Seq<InternalRow> run() {
    return rows;
  }

  @Override
  public scala.collection.immutable.Seq<Attribute> output() {
    return output;
  }

  @Override
  public scala.collection.immutable.Seq<SparkPlan> children() {
    return CollectionConverters.asScala(new ArrayList<SparkPlan>()).toList();
  }

  @Override
  public SparkPlan withNewChildrenInternal(scala.collection.immutable.IndexedSeq<SparkPlan> c) {
    return this;
  }

  @Override
  public String simpleString(int maxFields) {
    return "LakeAggregateExec " + output.mkString("[", ", ", "]") + " " + description;
  }

  @Override
  public int productArity() {
    return 3;
  }

  @Override
  public Object productElement(int n) {
    return n == 0 ? description : n == 1 ? output : rows;
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof LakeAggregateExec;
  }
}
