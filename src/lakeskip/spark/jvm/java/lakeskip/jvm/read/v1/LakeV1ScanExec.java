package lakeskip.jvm.read.v1;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import lakeskip.jvm.read.LakeFileIndex;
import lakeskip.jvm.read.LakeScan;
import lakeskip.jvm.read.ReadErrors;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.execution.SQLExecution$;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.metric.SQLMetrics$;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;

/**
 * Spark's V1 file scan of a lakeskip scan's kept files ({@link LakeV1Scan}) with lakeskip's
 * part of the V2 scan kept: its node shows the planner's decision ({@code Pruning: files
 * 12/12 kept; ...}) in EXPLAIN and its figures as SQL metrics (the {@code lakeskip*} metrics of
 * {@link LakePruning}, posted once per execution), and a data file Spark cannot read is one
 * line naming the file and the table ({@link ReadErrors}), as through the V2 scan. Rows and
 * batches pass through unchanged; the vector classes are the file scan's, so the
 * {@code ColumnarToRow} above reads them as typed as over {@code spark.read.parquet}.
 */
public final class LakeV1ScanExec extends SparkPlan {
  private static final long serialVersionUID = 1L;
  private final SparkPlan child;
  /** Driver-side only (not serialisable; executors get the rows, not the scan). */
  private final transient LakeScan scan;
  private final String table;
  private transient scala.collection.immutable.Map<String, SQLMetric> metrics;

  /** Public, with the product elements as arguments: Spark copies plan nodes reflectively. */
  public LakeV1ScanExec(SparkPlan child, LakeScan scan, String table) {
    this.child = child;
    this.scan = scan;
    this.table = table;
  }

  /** The V1 file scan it wraps. */
  public SparkPlan child() {
    return child;
  }

  /** The lakeskip scan it was planned from (on the driver; null where deserialised). */
  public LakeScan scan() {
    return scan;
  }

  @Override
  public scala.collection.immutable.Seq<Attribute> output() {
    return child.output();
  }

  @Override
  public scala.collection.immutable.Seq<SparkPlan> children() {
    List<SparkPlan> one = new ArrayList<>();
    one.add(child);
    return CollectionConverters.asScala(one).toList();
  }

  @Override
  public SparkPlan withNewChildrenInternal(scala.collection.immutable.IndexedSeq<SparkPlan> c) {
    return new LakeV1ScanExec(c.apply(0), scan, table);
  }

  @Override
  public boolean supportsColumnar() {
    return child.supportsColumnar();
  }

  @Override
  public scala.Option<scala.collection.immutable.Seq<String>> vectorTypes() {
    return child.vectorTypes();
  }

  @Override
  public Partitioning outputPartitioning() {
    return child.outputPartitioning();
  }

  @Override
  public scala.collection.immutable.Seq<org.apache.spark.sql.catalyst.expressions.SortOrder>
      outputOrdering() {
    return child.outputOrdering();
  }

  @Override
  public synchronized scala.collection.immutable.Map<String, SQLMetric> metrics() {
    if (metrics == null) {
      Map<String, SQLMetric> m = new LinkedHashMap<>();
      for (CustomMetric c : scan.supportedCustomMetrics()) {
        if (c.name().startsWith("lakeskip")) {
          m.put(c.name(), SQLMetrics$.MODULE$.createMetric(sparkContext(), c.description()));
        }
      }
      metrics = scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(m));
    }
    return metrics;
  }

  /** The pruning figures of this execution, posted as driver-side metric values. */
  private void postFigures() {
    CustomTaskMetric[] values = scan.reportDriverMetrics();
    scala.collection.immutable.Map<String, SQLMetric> mine = metrics();
    List<SQLMetric> set = new ArrayList<>();
    for (CustomTaskMetric v : values) {
      scala.Option<SQLMetric> m = mine.get(v.name());
      if (m.isDefined()) {
        m.get().set(v.value());
        set.add(m.get());
      }
    }
    String id = sparkContext().getLocalProperty(SQLExecution$.MODULE$.EXECUTION_ID_KEY());
    SQLMetrics$.MODULE$.postDriverMetricUpdates(sparkContext(), id,
        CollectionConverters.asScala(set).toList());
  }

  @Override
  public RDD<InternalRow> doExecute() {
    postFigures();
    return child.execute().mapPartitions(new Guard<InternalRow>(table), true,
        ClassTag$.MODULE$.apply(InternalRow.class));
  }

  @Override
  public RDD<ColumnarBatch> doExecuteColumnar() {
    postFigures();
    return child.executeColumnar().mapPartitions(new Guard<ColumnarBatch>(table), true,
        ClassTag$.MODULE$.apply(ColumnarBatch.class));
  }

  /** A partition's iterator whose read errors are {@link ReadErrors}' one line. */
  private static final class Guard<T>
      extends scala.runtime.AbstractFunction1<scala.collection.Iterator<T>,
          scala.collection.Iterator<T>>
      implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private final String table;

    Guard(String table) {
      this.table = table;
    }

    @Override
    public scala.collection.Iterator<T> apply(scala.collection.Iterator<T> in) {
      return new scala.collection.AbstractIterator<T>() {
        @Override
        public boolean hasNext() {
          try {
            return in.hasNext();
          } catch (Exception e) {
            throw ReadErrors.<RuntimeException>rethrow(e, table);
          }
        }

        @Override
        public T next() {
          try {
            return in.next();
          } catch (Exception e) {
            throw ReadErrors.<RuntimeException>rethrow(e, table);
          }
        }
      };
    }
  }

  @Override
  public String nodeName() {
    return "LakeV1Scan " + table;
  }

  @Override
  public String simpleString(int maxFields) {
    return nodeName() + " " + scan.pruningText();
  }

  @Override
  public int productArity() {
    return 3;
  }

  @Override
  public Object productElement(int n) {
    return n == 0 ? child : n == 1 ? scan : table;
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof LakeV1ScanExec;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof LakeV1ScanExec)) {
      return false;
    }
    LakeV1ScanExec other = (LakeV1ScanExec) o;
    return child.equals(other.child) && scan.equals(other.scan) && table.equals(other.table);
  }

  @Override
  public int hashCode() {
    return Objects.hash(child, scan, table);
  }
}
