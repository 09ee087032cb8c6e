package lakeskip.jvm.read.stream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import lakeskip.jvm.catalog.LakeTable;
import lakeskip.jvm.read.FilterPushDown;
import lakeskip.jvm.read.LakeScanBuilder;
import lakeskip.jvm.read.ScanRequest;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxFiles;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.readStream.table("lakeskip.db.t")}: a table read as Paimon's Spark source reads
 * it, one micro-batch per range of snapshots. Java stays a reader: Python decides where the
 * stream starts ({@code stream_start}: {@code scan.mode}, {@code scan.snapshot-id}, {@code
 * scan.timestamp-millis}), how far each micro-batch goes ({@code stream_latest}, with {@code
 * maxFilesPerTrigger} and the end of a {@code Trigger.AvailableNow} run) and which files it
 * reads ({@code stream_plan}: the first batch the starting snapshot whole, then the files each
 * APPEND snapshot added, pruned by the query's filter, see {@code lakeskip.planner.stream});
 * each batch's files are read by the batch read's own scan ({@link LakeScanBuilder#ofFiles}),
 * a primary-key table's after the first as the versions each write added ({@link
 * LakeScanBuilder#ofChanges}, {@link LakeChangeScan}).
 *
 * <p>Offsets are snapshot ids ({@link LakeOffset}), so a restarted query plans the same files
 * for the same range. The initial offset is decided once and kept in the checkpoint (the
 * source's metadata folder), so a query restarted before its first batch committed starts
 * where it first did, not at a newer latest snapshot.
 *
 * <p>Filters: Spark pushes none into a streaming scan; {@code LakeStreamFilters}, an optimizer
 * rule of {@code LakeExtensions}, hands this stream the filters over it ({@link #pushFilters})
 * before each batch's files are planned. Spark still applies them to the rows.
 */
public final class LakeMicroBatchStream implements MicroBatchStream, SupportsTriggerAvailableNow {
  /** Paimon's {@code read.stream.maxFilesPerTrigger}, and Spark's file source's spelling. */
  static final String[] MAX_FILES = {"read.stream.maxFilesPerTrigger", "maxFilesPerTrigger"};

  private final LakeTable table;
  private final CaseInsensitiveStringMap options;
  private final String checkpoint;
  private final Integer maxFiles;
  private volatile scala.collection.immutable.Seq<Expression> filters = FilterPushDown.none();
  /** The last snapshot a {@code Trigger.AvailableNow} run reads (null: no cap). */
  private volatile Long until;
  private LakeOffset initial;

  public LakeMicroBatchStream(
      LakeTable table, CaseInsensitiveStringMap options, String checkpoint) {
    if (table.pinned) {
      throw Bridge.error("cannot read " + table.name() + " at an older snapshot as a stream"
          + " (use scan.mode = from-snapshot)", null);
    }
    this.table = table;
    this.options = options;
    this.checkpoint = checkpoint;
    Integer max = null;
    for (String k : MAX_FILES) {
      if (options.containsKey(k)) {
        try {
          max = Integer.parseInt(options.get(k).trim());
        } catch (NumberFormatException e) {
          max = -1;
        }
        if (max < 1) {
          throw Bridge.error(k + " = " + options.get(k) + ": expected a positive integer", null);
        }
      }
    }
    this.maxFiles = max;
  }

  /** The filters over this stream in the query ({@code LakeStreamFilters}). */
  public void pushFilters(scala.collection.immutable.Seq<Expression> filters) {
    this.filters = FilterPushDown.forFiles(table, filters);
  }

  /** The table this stream reads. */
  public LakeTable table() {
    return table;
  }

  @Override
  public synchronized Offset initialOffset() {
    if (initial != null) {
      return initial;
    }
    Path file = new Path(checkpoint, "lakeskip-initial-offset.json");
    try {
      FileSystem fs = file.getFileSystem(SparkSession.active().sessionState().newHadoopConf());
      if (fs.exists(file)) {
        try (InputStream in = fs.open(file)) {
          initial = LakeOffset.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
        return initial;
      }
      ObjectNode p = table.ops.payload(table.ident);
      ObjectNode opts = p.putObject(Key.OPTIONS);
      for (Map.Entry<String, String> e : options.asCaseSensitiveMap().entrySet()) {
        opts.put(e.getKey(), e.getValue());
      }
      LakeOffset start = LakeOffset.of(Bridge.ask(Op.STREAM_START, p, null));
      try (OutputStream out = fs.create(file, false)) {
        out.write(start.json().getBytes(StandardCharsets.UTF_8));
      }
      initial = start;
      return start;
    } catch (IOException e) {
      throw Bridge.error("lakeskip: cannot keep the stream's initial offset in " + file + ": "
          + e.getMessage(), e);
    }
  }

  @Override
  public Offset deserializeOffset(String json) {
    return LakeOffset.parse(json);
  }

  @Override
  public ReadLimit getDefaultReadLimit() {
    return maxFiles != null ? ReadLimit.maxFiles(maxFiles) : ReadLimit.allAvailable();
  }

  @Override
  public Offset latestOffset() {
    throw new UnsupportedOperationException(
        "latestOffset(Offset, ReadLimit) should be called instead of this method");
  }

  @Override
  public Offset latestOffset(Offset startOffset, ReadLimit limit) {
    LakeOffset start = startOffset == null ? (LakeOffset) initialOffset() : (LakeOffset) startOffset;
    ObjectNode p = table.ops.payload(table.ident);
    p.put(Key.SNAPSHOT, start.snapshot);
    p.put(Key.FULL, start.full);
    if (limit instanceof ReadMaxFiles) {
      p.put(Key.MAX_FILES, ((ReadMaxFiles) limit).maxFiles());
    }
    Long cap = until;
    if (cap != null) {
      p.put(Key.UNTIL, cap);
    }
    return LakeOffset.of(Bridge.ask(Op.STREAM_LATEST, p, null));
  }

  @Override
  public void prepareForTriggerAvailableNow() {
    until = Bridge.ask(Op.STREAM_LATEST, table.ops.payload(table.ident), null)
        .path(Key.SNAPSHOT).asLong(0);
  }

  @Override
  public InputPartition[] planInputPartitions(Offset start, Offset end) {
    LakeOffset from = (LakeOffset) start;
    LakeOffset to = (LakeOffset) end;
    ObjectNode p = ScanRequest.payload(table, filters);
    if (to.snapshot > 0) {
      p.put(Key.SNAPSHOT_ID, to.snapshot);
    }
    p.put(Key.START, from.snapshot);
    p.put(Key.START_FULL, from.full);
    p.put(Key.END, to.snapshot);
    if (table.schemaId != null) { // Python plans the files against the stream's columns
      p.put(Key.STREAM_SCHEMA, table.schemaId);
    }
    ScanRequest.filterColumns(p, filters);
    JsonNode reply = Bridge.ask(Op.STREAM_PLAN, p, null);
    Scan scan = reply.path(Key.CHANGES).isObject()
        ? LakeScanBuilder.ofChanges(table, options, filters, reply)
        : LakeScanBuilder.ofFiles(table, options, filters, reply);
    Batch batch = scan.toBatch();
    PartitionReaderFactory factory = batch.createReaderFactory();
    StructType read = scan.readSchema();
    int[] src = StreamPartition.sources(read, table.schema);
    List<InputPartition> out = new ArrayList<>();
    for (InputPartition part : batch.planInputPartitions()) {
      out.add(new StreamPartition(part, factory, read, src));
    }
    return out.toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new StreamPartition.Factory();
  }

  @Override
  public void commit(Offset end) {}

  @Override
  public void stop() {}

  @Override
  public String toString() {
    return "LakeMicroBatchStream(" + table.name() + ")";
  }
}
