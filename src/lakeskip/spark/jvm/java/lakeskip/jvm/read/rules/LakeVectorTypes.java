package lakeskip.jvm.read.rules;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import lakeskip.jvm.read.LakeScan;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.ColumnarToRowExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark's generated code reads a lakeskip scan's column vectors through their own classes, as
 * it reads plain Spark's V1 Parquet scan's. The code Spark generates above a columnar scan
 * ({@code ColumnarToRowExec}) types each column vector by the scan node's {@code vectorTypes}:
 * plain Spark's {@code FileSourceScanExec} names {@code OnHeapColumnVector} (or off-heap) and
 * {@code ConstantColumnVector}, a V2 {@code BatchScanExec} names none, so each value of a
 * lakeskip scan was read through the abstract {@code ColumnVector} (measured on TPC-H q1:
 * task CPU 1.08x plain V1's, the same as plain Spark's own V2 scan; see bench/README.md).
 *
 * <p>After Spark inserted its row/columnar transitions (a columnar rule, injected by {@link
 * PreCboRules}), a {@code BatchScanExec} of a {@link LakeScan} right under a {@code
 * ColumnarToRowExec} becomes a {@link TypedScan}: the same node (name, EXPLAIN text, metrics,
 * equality, runtime filters, every copy Spark makes of it) whose {@code vectorTypes} are
 * {@link LakeScan#vectorTypes}, asked of the scan it holds, and only where those are known
 * exactly (a scan with none stays as it is). Spark conf {@value #ENABLED} (default true) turns
 * it off. A session whose catalog is attached at run time (no {@code LakeExtensions}) keeps
 * the untyped reads: Spark builds a session's columnar rules once, with its state; sessions
 * made from it afterwards ({@code newSession()}) get the rule.
 */
public final class LakeVectorTypes extends ColumnarRule {
  /** Spark conf: {@code false} leaves lakeskip's scan nodes untyped. */
  public static final String ENABLED = "spark.lakeskip.typed-vectors.enabled";

  private final SparkSession session;

  public LakeVectorTypes(SparkSession session) {
    this.session = session;
  }

  @Override
  public Rule<SparkPlan> postColumnarTransitions() {
    return new Typing(session);
  }

  /** The rule: each eligible scan under a {@code ColumnarToRowExec} typed. */
  private static final class Typing extends Rule<SparkPlan> {
    private final SparkSession session;

    Typing(SparkSession session) {
      this.session = session;
    }

    @Override
    public SparkPlan apply(SparkPlan plan) {
      boolean on = Boolean.parseBoolean(session.conf().get(ENABLED, "true").trim());
      return on ? typed(plan) : plan;
    }
  }

  /**
   * {@code node} with its eligible scans typed. Rebuilt here, not by {@code withNewChildren}:
   * that keeps a node whose new children are equal to its old ones, and a {@link TypedScan}
   * is equal to the scan it types ({@code BatchScanExec.equals}: the same scan and filters).
   */
  private static SparkPlan typed(SparkPlan node) {
    if (node instanceof ColumnarToRowExec) {
      SparkPlan child = ((ColumnarToRowExec) node).child();
      TypedScan scan = child instanceof BatchScanExec ? TypedScan.of((BatchScanExec) child) : null;
      if (scan != null) {
        SparkPlan rows = new ColumnarToRowExec(scan);
        rows.copyTagsFrom(node);
        return rows;
      }
    }
    boolean changed = false;
    List<SparkPlan> children = new ArrayList<>();
    for (SparkPlan c : CollectionConverters.asJava(node.children())) {
      SparkPlan r = typed(c);
      changed |= r != c;
      children.add(r);
    }
    if (!changed) {
      return node;
    }
    SparkPlan rebuilt =
        node.withNewChildrenInternal(CollectionConverters.asScala(children).toIndexedSeq());
    rebuilt.copyTagsFrom(node);
    return rebuilt;
  }

  /**
   * A {@code BatchScanExec} that names its batches' column vector classes. Its copies stay
   * typed: {@code copy} is overridden, and Spark's reflective {@code makeCopy} finds this
   * class's one constructor, {@code BatchScanExec}'s arguments. The types are asked of the
   * scan the node holds (never carried over from another node), on the driver, once.
   * {@code javac} cannot subclass Spark's Scala case class from its own class file (generic
   * signatures Java reads as clashing): this is compiled against the stand-in in {@code
   * spark/jvm/stubs/} (the same erased signatures, which the JVM links by), never packaged.
   */
  public static final class TypedScan extends BatchScanExec {
    private static final long serialVersionUID = 1L;
    private transient volatile Option<Seq<String>> types;

    public TypedScan(Seq<AttributeReference> output, Scan scan, Seq<Expression> runtimeFilters,
        Option<Seq<SortOrder>> ordering, Table table,
        Option<Seq<Expression>> keyGroupedPartitioning) {
      super(output, scan, runtimeFilters, ordering, table, keyGroupedPartitioning);
    }

    /** {@code b} typed (its tags kept), or null where its vector types are not known. */
    @SuppressWarnings("unchecked")
    static TypedScan of(BatchScanExec b) {
      if (b instanceof TypedScan || !(b.scan() instanceof LakeScan)) {
        return null;
      }
      // a BatchScanExec's output is a Seq of AttributeReference (the stand-in says Attribute)
      Seq<AttributeReference> output = (Seq<AttributeReference>) (Object) b.output();
      TypedScan typed = new TypedScan(output, b.scan(), b.runtimeFilters(), b.ordering(),
          b.table(), b.keyGroupedPartitioning());
      if (typed.vectorTypes().isEmpty()) {
        return null;
      }
      typed.copyTagsFrom(b);
      return typed;
    }

    @Override
    public Option<Seq<String>> vectorTypes() {
      Option<Seq<String>> t = types;
      if (t == null) {
        String[] known = scan() instanceof LakeScan
            ? ((LakeScan) scan()).vectorTypes(output().size()) : null;
        t = known == null
            ? Option.empty()
            : Option.apply(CollectionConverters.asScala(Arrays.asList(known)).toSeq());
        types = t;
      }
      return t;
    }

    @Override
    public BatchScanExec copy(Seq<AttributeReference> output, Scan scan,
        Seq<Expression> runtimeFilters, Option<Seq<SortOrder>> ordering, Table table,
        Option<Seq<Expression>> keyGroupedPartitioning) {
      return new TypedScan(output, scan, runtimeFilters, ordering, table, keyGroupedPartitioning);
    }
  }
}
