package lakeskip.jvm.read;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import lakeskip.jvm.cache.ReaderFactories;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EvalMode;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Paimon's schema evolution on the catalog's read: the kept files whose schema version reads
 * right by column name go through one Parquet scan (the first part); the files of each other
 * version through a Parquet scan of their own, with that version's column names and types and
 * no pushed filters (a filter names the current column), whose rows are projected onto the
 * current read schema by field id, as Python mapped it: a renamed column under its new name, a
 * widened one cast, one added since as NULL. Reads rows: Spark requires one mode for all
 * partitions of a scan.
 */
public final class LakeEvolvedScan implements Scan, Batch {
  private final List<Scan> parts;
  /** Per part: the column of its read schema each output column comes from (-1: NULL). */
  private final List<int[]> sources;
  private final StructType readSchema;

  /**
   * @param parts the by-name scan first, then one scan per older schema version
   * @param sources per part, for each column of {@code readSchema}, its position in that
   *     part's read schema, or -1 (the files predate the column); null for an identity part
   */
  public LakeEvolvedScan(List<Scan> parts, List<int[]> sources, StructType readSchema) {
    this.parts = parts;
    this.sources = sources;
    this.readSchema = readSchema;
  }

  /** The by-name scan, then one per older schema version. */
  public List<Scan> parts() {
    return parts;
  }

  @Override
  public StructType readSchema() {
    return readSchema;
  }

  @Override
  public String description() {
    return parts.get(0).description() + " EvolvedSchemas: " + (parts.size() - 1);
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    List<InputPartition> out = new ArrayList<>();
    for (int i = 0; i < parts.size(); i++) {
      for (InputPartition p : parts.get(i).toBatch().planInputPartitions()) {
        out.add(new Part(i, p));
      }
    }
    return out.toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    List<PartitionReaderFactory> factories = new ArrayList<>();
    List<List<Expression>> projections = new ArrayList<>();
    for (int i = 0; i < parts.size(); i++) {
      Scan part = parts.get(i);
      factories.add(ReaderFactories.of(part));
      StructType from = part.readSchema();
      int[] src = sources.get(i);
      List<Expression> exprs = new ArrayList<>();
      for (int j = 0; j < readSchema.fields().length; j++) {
        exprs.add(column(from, src == null ? j : src[j], readSchema.fields()[j]));
      }
      projections.add(exprs);
    }
    return new Factory(factories, projections);
  }

  /**
   * A current column read from a row of an older schema version by field id, as Python mapped
   * it: the value at position {@code k} of {@code from}, cast where the column was widened
   * since, or NULL where the files predate the column ({@code k < 0}). Also how {@code
   * LakePkScan} projects an older version's key-value rows onto the current ones.
   */
  public static Expression column(StructType from, int k, StructField want) {
    if (k < 0) {
      return Literal.create(null, want.dataType());
    }
    StructField have = from.fields()[k];
    Expression e = new BoundReference(k, have.dataType(), have.nullable());
    if (!have.dataType().equals(want.dataType())) {
      e = new Cast(e, want.dataType(), scala.Option.empty(), EvalMode.LEGACY());
    }
    return e;
  }

  /** {@code inner}'s rows through {@code exprs}: an older version's rows as the current ones. */
  public static PartitionReader<InternalRow> projected(
      PartitionReader<InternalRow> inner, List<Expression> exprs) {
    UnsafeProjection projection =
        UnsafeProjection.create(scala.jdk.javaapi.CollectionConverters.asScala(exprs).toSeq());
    return new PartitionReader<InternalRow>() {
      @Override
      public boolean next() throws IOException {
        return inner.next();
      }

      @Override
      public InternalRow get() {
        return projection.apply(inner.get());
      }

      @Override
      public void close() throws IOException {
        inner.close();
      }
    };
  }

  /** A partition of one part. */
  static final class Part implements InputPartition {
    private static final long serialVersionUID = 1L;
    final int part;
    final InputPartition inner;

    Part(int part, InputPartition inner) {
      this.part = part;
      this.inner = inner;
    }

    @Override
    public String[] preferredLocations() {
      return inner.preferredLocations();
    }
  }

  static final class Factory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final List<PartitionReaderFactory> factories;
    private final List<List<Expression>> projections;

    Factory(List<PartitionReaderFactory> factories, List<List<Expression>> projections) {
      this.factories = new ArrayList<>(factories);
      this.projections = new ArrayList<>(projections);
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      Part p = (Part) partition;
      return projected(factories.get(p.part).createReader(p.inner), projections.get(p.part));
    }
  }
}
