package lakeskip.jvm.write;

import com.fasterxml.jackson.databind.node.ObjectNode;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import lakeskip.jvm.bridge.Protocol.WriteMode;
import lakeskip.jvm.catalog.LakeTable;
import lakeskip.jvm.read.PredicateJson;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.write.SupportsOverwriteV2;
import org.apache.spark.sql.connector.write.V1Write;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.sources.InsertableRelation;

/**
 * Every write (INSERT, writeTo, insertInto, saveAsTable, CTAS, and each micro-batch of a
 * streaming query: {@link LakeStreamWrite}) arrives here; Spark hands the
 * query's Dataset to {@link InsertableRelation#insert} on the driver and Python runs its
 * Spark-task writer and one atomic commit. Spark's {@code overwrite} flag is always false on
 * this path: the mode comes from {@link #truncate} / {@link #overwrite}.
 * Dynamic partition overwrite ({@link #overwriteDynamicPartitions}) is the same V1 write in
 * mode {@code dynamic}: Spark has no V1 exec for it, so {@link LakeDmlStrategy} plans it as
 * Spark's V1 append exec over this write.
 */
public final class LakeWriteBuilder
    implements SupportsOverwriteV2, org.apache.spark.sql.connector.write.SupportsDynamicOverwrite {
  private final LakeTable table;
  /** Spark's id of the write: a streaming query's id ({@link LakeStreamWrite}). */
  private final String queryId;
  private String mode = WriteMode.APPEND;
  private Predicate[] condition = new Predicate[0];

  public LakeWriteBuilder(LakeTable table, String queryId) {
    this.table = table;
    this.queryId = queryId;
  }

  @Override
  public WriteBuilder truncate() {
    mode = WriteMode.TRUNCATE;
    return this;
  }

  @Override
  public WriteBuilder overwriteDynamicPartitions() {
    mode = WriteMode.DYNAMIC;
    return this;
  }

  @Override
  public WriteBuilder overwrite(Predicate[] predicates) {
    mode = WriteMode.OVERWRITE;
    condition = predicates;
    return this;
  }

  @Override
  public Write build() {
    final String m = mode;
    final Predicate[] c = condition;
    return new V1Write() {
      @Override
      public InsertableRelation toInsertableRelation() {
        return (data, overwrite) -> {
          ObjectNode p = table.ops.payload(table.ident);
          p.put(Key.MODE, overwrite ? WriteMode.TRUNCATE : m);
          p.set(Key.CONDITION, PredicateJson.predicates(c));
          p.set(Key.SESSION, Bridge.session());
          Bridge.ask(Op.WRITE, p, data);
        };
      }

      /** A streaming query's writes: output mode append, or complete ({@link #truncate}). */
      @Override
      public StreamingWrite toStreaming() {
        return new LakeStreamWrite(table, queryId, m);
      }

      @Override
      public String description() {
        return "lakeskip " + m + " into " + table.name();
      }
    };
  }
}
