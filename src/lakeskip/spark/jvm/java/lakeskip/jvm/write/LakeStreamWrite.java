package lakeskip.jvm.write;

import com.fasterxml.jackson.databind.node.ObjectNode;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import lakeskip.jvm.catalog.LakeTable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;

/**
 * A streaming query's writes into a lakeskip table ({@code df.writeStream.toTable(...)}):
 * each micro-batch is the batch write of its rows (Python's Spark-task writer: files, stats,
 * indexes, then compaction) committed once, with the query id and the batch id as the
 * snapshot's commit user and identifier, so a batch Spark runs again after a restart writes
 * nothing twice ({@code stream_write}).
 *
 * <p>Spark plans a micro-batch of a table with {@code STREAMING_WRITE} as a DSv2 write whose
 * rows go to data writers on the executors; lakeskip writes with Python instead. {@link
 * LakeStreamWriteExec} (planned by {@link LakeDmlStrategy}) takes the batch's rows and asks
 * Spark's {@code MicroBatchWrite} to commit its epoch: Spark then calls {@link #commit} with
 * the batch id, and the write happens there. Without lakeskip's planner strategy the data
 * writer factory fails in one line.
 */
final class LakeStreamWrite implements StreamingWrite {
  private final LakeTable table;
  private final String queryId;
  private final String mode;
  /** The batch's rows while {@link LakeStreamWriteExec} commits its epoch on this thread. */
  private final ThreadLocal<Dataset<Row>> pending = new ThreadLocal<>();

  LakeStreamWrite(LakeTable table, String queryId, String mode) {
    this.table = table;
    this.queryId = queryId;
    this.mode = mode;
  }

  /** Writes {@code rows} as the batch {@code epoch} commits (the one caller of {@link
   * #commit}). */
  void write(Dataset<Row> rows, BatchWrite epoch) {
    pending.set(rows);
    try {
      epoch.commit(new WriterCommitMessage[0]);
    } finally {
      pending.remove();
    }
  }

  @Override
  public void commit(long epochId, WriterCommitMessage[] messages) {
    Dataset<Row> rows = pending.get();
    if (rows == null) {
      throw Bridge.error(noStrategy(), null);
    }
    ObjectNode p = table.ops.payload(table.ident);
    p.put(Key.QUERY_ID, queryId);
    p.put(Key.BATCH_ID, epochId);
    p.put(Key.MODE, mode);
    p.set(Key.SESSION, Bridge.session());
    Bridge.ask(Op.STREAM_WRITE, p, rows); // a replayed batch: Python writes nothing
  }

  @Override
  public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
    throw Bridge.error(noStrategy(), null);
  }

  @Override
  public void abort(long epochId, WriterCommitMessage[] messages) {
    // nothing to undo: a failed write published nothing and removed its files
  }

  private String noStrategy() {
    return "a streaming write into "
        + table.name()
        + " needs lakeskip's planner strategy: start the session with"
        + " spark.sql.extensions=lakeskip.jvm.LakeExtensions, or call lakeskip.connect";
  }

  @Override
  public String toString() {
    return "lakeskip stream " + mode + " into " + table.name() + " (query " + queryId + ")";
  }
}
