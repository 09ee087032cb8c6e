package lakeskip.jvm.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.StagedTable;

/**
 * The target of an atomic CREATE / REPLACE TABLE ... AS SELECT: Python created it under a
 * hidden name ({@code lakeskip.catalog.ops.staging}); Spark writes the query's rows to it like to
 * any lakeskip table, then {@link #commitStagedChanges} publishes it under its real name (or
 * {@link #abortStagedChanges} drops it). Without staging (an object-store warehouse) the real
 * table was created up front and abort drops it.
 */
public final class LakeStagedTable extends LakeTable implements StagedTable {
  private final Identifier target;
  private final String staged;
  private final String mode;

  private LakeStagedTable(
      LakeOps ops, Identifier writeTo, Identifier target, JsonNode desc, String mode) {
    super(ops, writeTo, desc);
    this.target = target;
    this.staged = desc.path(Key.STAGED).isTextual() ? desc.get(Key.STAGED).asText() : null;
    this.mode = mode;
  }

  static LakeStagedTable of(LakeOps ops, Identifier target, JsonNode desc, String mode) {
    JsonNode s = desc.path(Key.STAGED);
    Identifier writeTo = s.isTextual() ? Identifier.of(target.namespace(), s.asText()) : target;
    return new LakeStagedTable(ops, writeTo, target, desc, mode);
  }

  /** Spark's staged-table metrics (Java needs the choice: LakeTable is a TruncatableTable). */
  @Override
  public org.apache.spark.sql.connector.metric.CustomTaskMetric[] reportDriverMetrics() {
    return StagedTable.super.reportDriverMetrics();
  }

  @Override
  public String name() {
    return ops.catalogName + "." + String.join(".", target.namespace()) + "." + target.name();
  }

  private ObjectNode payload() {
    ObjectNode p = ops.payload(target);
    p.put(Key.MODE, mode);
    if (staged != null) {
      p.put(Key.STAGED, staged);
    }
    return p;
  }

  @Override
  public void commitStagedChanges() {
    if (staged != null) {
      ops.call(Op.COMMIT_STAGED, payload());
    }
  }

  @Override
  public void abortStagedChanges() {
    ops.call(Op.ABORT_STAGED, payload());
  }
}
