package org.apache.spark.sql.execution.datasources.v2;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.SparkPlan;
import scala.Option;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

/**
 * COMPILE-TIME STAND-IN, never packaged: Spark's {@code BatchScanExec} as {@code javac} may
 * subclass it ({@code lakeskip.jvm.read.rules.LakeVectorTypes.TypedScan}). The real class,
 * a Scala case class, cannot be subclassed from Java source: its {@code output()} ({@code
 * Seq<AttributeReference>}) and its final {@code mapChildren} (from Scala's {@code LeafLike})
 * do not override their generic declarations in Java's eyes (Scala's {@code Seq} is
 * covariant, Java's view of it is not), though they do in the JVM's. This declares the
 * members the subclass uses with the real class's erased signatures (the JVM links by
 * those); {@code lakeskip.spark.jvm.build} compiles it first, puts it before Spark's jars on
 * the class path of the lakeskip sources, and packages only the lakeskip classes.
 */
public class BatchScanExec extends SparkPlan {
  public BatchScanExec(Seq<AttributeReference> output, Scan scan, Seq<Expression> runtimeFilters,
      Option<Seq<SortOrder>> ordering, Table table,
      Option<Seq<Expression>> keyGroupedPartitioning) {
    throw new UnsupportedOperationException();
  }

  @Override
  public Seq<Attribute> output() {
    throw new UnsupportedOperationException();
  }

  public Scan scan() {
    throw new UnsupportedOperationException();
  }

  public Seq<Expression> runtimeFilters() {
    throw new UnsupportedOperationException();
  }

  public Option<Seq<SortOrder>> ordering() {
    throw new UnsupportedOperationException();
  }

  public Table table() {
    throw new UnsupportedOperationException();
  }

  public Option<Seq<Expression>> keyGroupedPartitioning() {
    throw new UnsupportedOperationException();
  }

  public BatchScanExec copy(Seq<AttributeReference> output, Scan scan,
      Seq<Expression> runtimeFilters, Option<Seq<SortOrder>> ordering, Table table,
      Option<Seq<Expression>> keyGroupedPartitioning) {
    throw new UnsupportedOperationException();
  }

  @Override
  public Seq<SparkPlan> children() {
    throw new UnsupportedOperationException();
  }

  @Override
  public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> children) {
    throw new UnsupportedOperationException();
  }

  @Override
  public RDD<InternalRow> doExecute() {
    throw new UnsupportedOperationException();
  }

  @Override
  public int productArity() {
    throw new UnsupportedOperationException();
  }

  @Override
  public Object productElement(int n) {
    throw new UnsupportedOperationException();
  }

  @Override
  public boolean canEqual(Object that) {
    throw new UnsupportedOperationException();
  }
}
