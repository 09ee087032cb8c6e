package lakeskip.jvm.read.stream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * A streaming read's position, a snapshot id ({@code lakeskip.planner.stream.StreamOffset}):
 * {@code {"snapshot": s, "full": false}} says the snapshots up to {@code s} were delivered;
 * {@code full} says snapshot {@code s} is to be read whole next (the first micro-batch of
 * {@code scan.mode = latest-full}). Spark compares offsets by their JSON.
 */
public final class LakeOffset extends Offset {
  public final long snapshot;
  public final boolean full;

  public LakeOffset(long snapshot, boolean full) {
    this.snapshot = snapshot;
    this.full = full;
  }

  /** From a reply or request carrying {@code snapshot} and {@code full}. */
  static LakeOffset of(JsonNode n) {
    return new LakeOffset(n.path(Key.SNAPSHOT).asLong(0), n.path(Key.FULL).asBoolean(false));
  }

  /** From its JSON (a checkpoint's offset log). */
  public static LakeOffset parse(String json) {
    try {
      return of(Bridge.JSON.readTree(json));
    } catch (Exception e) {
      throw Bridge.error("lakeskip: unreadable stream offset " + json, e);
    }
  }

  @Override
  public String json() {
    ObjectNode n = Bridge.JSON.createObjectNode();
    n.put(Key.SNAPSHOT, snapshot);
    n.put(Key.FULL, full);
    return n.toString();
  }
}
