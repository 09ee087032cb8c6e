package lakeskip.jvm.write;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.V2CommandExec;

/**
 * One micro-batch of a streaming query into a lakeskip table ({@link LakeStreamWrite}): the
 * batch's rows (its planned query, {@code child}) become a DataFrame for Python's batch
 * writer, as Spark's own {@code foreachBatch} sink hands them over (an RDD of the batch's
 * rows, no longer a streaming plan). Returns no rows.
 *
 * <p>Spark internals used here, because the public API has no other way to a batch's rows on
 * the driver: {@code MicroBatchWrite} (the epoch's {@link BatchWrite}; its {@code commit}
 * passes the batch id to {@link LakeStreamWrite#commit}) and {@code
 * classic.SparkSession.internalCreateDataFrame} (a DataFrame over the child's RDD).
 */
public final class LakeStreamWriteExec extends V2CommandExec {
  private final SparkPlan child;
  private final BatchWrite epoch;
  private final LakeStreamWrite write;

  /** Public, with the product elements as arguments: Spark copies plan nodes reflectively. */
  public LakeStreamWriteExec(SparkPlan child, BatchWrite epoch, LakeStreamWrite write) {
    this.child = child;
    this.epoch = epoch;
    this.write = write;
  }

  @Override
  public scala.collection.immutable.Seq<InternalRow> run() {
    Dataset<Row> rows = session().internalCreateDataFrame(child.execute(), child.schema(), false);
    write.write(rows, epoch);
    return scala.jdk.javaapi.CollectionConverters.asScala(new ArrayList<InternalRow>()).toList();
  }

  @Override
  public scala.collection.immutable.Seq<Attribute> output() {
    return scala.jdk.javaapi.CollectionConverters.asScala(new ArrayList<Attribute>()).toList();
  }

  @Override
  public scala.collection.immutable.Seq<SparkPlan> children() {
    List<SparkPlan> c = new ArrayList<>();
    c.add(child);
    return scala.jdk.javaapi.CollectionConverters.asScala(c).toList();
  }

  @Override
  public SparkPlan withNewChildrenInternal(scala.collection.immutable.IndexedSeq<SparkPlan> c) {
    return new LakeStreamWriteExec(c.apply(0), epoch, write);
  }

  @Override
  public String simpleString(int maxFields) {
    return "LakeStreamWrite " + write;
  }

  @Override
  public int productArity() {
    return 3;
  }

  @Override
  public Object productElement(int n) {
    switch (n) {
      case 0:
        return child;
      case 1:
        return epoch;
      case 2:
        return write;
      default:
        throw new IndexOutOfBoundsException(String.valueOf(n));
    }
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof LakeStreamWriteExec;
  }
}
