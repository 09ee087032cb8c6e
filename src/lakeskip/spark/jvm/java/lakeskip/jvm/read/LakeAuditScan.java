package lakeskip.jvm.read;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import lakeskip.jvm.read.pk.LakeDvScan;
import lakeskip.jvm.read.pk.LakePkScan;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code t$audit_log}: the rows of an inner scan (plain Parquet, {@link LakeDvScan} or the
 * keep-delete merge of {@link LakePkScan}) with Paimon's {@code rowkind} column first, taken
 * from the key-value files' {@code _VALUE_KIND} byte (0 +I, 1 -U, 2 +U, 3 -D), which is then
 * dropped; rows of an append table (no such column) are all {@code +I}. Reads rows. The
 * column is nullable, as Paimon declares it (a VARCHAR without NOT NULL).
 */
public final class LakeAuditScan extends RowRewriteScan {
  static final String ROWKIND = "rowkind";
  private static final String[] KINDS = {"+I", "-U", "+U", "-D"};

  /** {@code _VALUE_KIND} in the inner scan's rows, -1 for an append table. */
  private final int kind;

  LakeAuditScan(Scan inner) {
    super(inner, withRowkind(inner.readSchema()));
    this.kind = kindIndex(inner.readSchema());
  }

  private static int kindIndex(StructType full) {
    return java.util.Arrays.asList(full.fieldNames()).indexOf(LakePkScan.KIND);
  }

  /** {@code full} with rowkind first and without {@code _VALUE_KIND}. */
  private static StructType withRowkind(StructType full) {
    List<StructField> out = without(full, kindIndex(full));
    out.add(0, new StructField(ROWKIND, DataTypes.StringType, true, Metadata.empty()));
    return new StructType(out.toArray(new StructField[0]));
  }

  /** The spark-facing schema of {@code t$audit_log}: rowkind, then the table's columns. */
  public static StructType schema(StructType table) {
    return prepend(new StructField(ROWKIND, DataTypes.StringType, true, Metadata.empty()), table);
  }

  public static StructType prepend(StructField first, StructType rest) {
    StructField[] out = new StructField[rest.fields().length + 1];
    out[0] = first;
    System.arraycopy(rest.fields(), 0, out, 1, rest.fields().length);
    return new StructType(out);
  }

  /** The filters the files can answer: those not on rowkind (no file holds that column). */
  static scala.collection.immutable.Seq<Expression> withoutRowkindFilters(
      scala.collection.immutable.Seq<Expression> filters) {
    List<Expression> kept = new ArrayList<>();
    for (Expression e : CollectionConverters.asJava(filters)) {
      boolean onRowkind = false;
      for (Attribute a : CollectionConverters.asJava(e.references().toSeq())) {
        onRowkind |= a.name().equals(ROWKIND);
      }
      if (!onRowkind) {
        kept.add(e);
      }
    }
    return CollectionConverters.asScala(kept).toList();
  }

  /** Spark's required columns minus rowkind (null: all). */
  static StructType withoutRowkind(StructType required) {
    if (required == null) {
      return null;
    }
    List<StructField> out = new ArrayList<>();
    for (StructField f : required.fields()) {
      if (!f.name().equals(ROWKIND)) {
        out.add(f);
      }
    }
    return new StructType(out.toArray(new StructField[0]));
  }

  @Override
  public String description() {
    return inner.description() + " AuditLog";
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    PartitionReaderFactory rows = innerFactory();
    StructType full = inner.readSchema();
    DataType[] types = new DataType[full.fields().length];
    for (int i = 0; i < types.length; i++) {
      types[i] = full.fields()[i].dataType();
    }
    return new Factory(rows, types, kind);
  }

  static final class Factory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final PartitionReaderFactory inner;
    private final DataType[] types;
    private final int kind;

    Factory(PartitionReaderFactory inner, DataType[] types, int kind) {
      this.inner = inner;
      this.types = types;
      this.kind = kind;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      PartitionReader<InternalRow> rows = inner.createReader(partition);
      return new PartitionReader<InternalRow>() {
        private InternalRow row;

        @Override
        public boolean next() throws IOException {
          if (!rows.next()) {
            return false;
          }
          InternalRow r = rows.get();
          Object[] values = new Object[kind < 0 ? types.length + 1 : types.length];
          int k = kind < 0 ? 0 : r.getByte(kind);
          if (k < 0 || k >= KINDS.length) {
            throw new IOException("lakeskip: unknown _VALUE_KIND " + k);
          }
          values[0] = UTF8String.fromString(KINDS[k]);
          int j = 1;
          for (int i = 0; i < types.length; i++) {
            if (i != kind) {
              values[j++] = r.isNullAt(i) ? null : r.get(i, types[i]);
            }
          }
          row = new GenericInternalRow(values);
          return true;
        }

        @Override
        public InternalRow get() {
          return row;
        }

        @Override
        public void close() throws IOException {
          rows.close();
        }
      };
    }
  }
}
