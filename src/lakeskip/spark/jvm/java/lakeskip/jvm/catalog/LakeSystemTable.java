package lakeskip.jvm.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A Paimon system table computed from metadata ({@code lakeskip.db.`t$snapshots`}, see
 * {@code lakeskip/spark/bridge/system_service.py}): read-only, its rows asked of Python when Spark
 * plans the scan ({@code system_rows}) and handed to Spark as a {@link LocalScan} (planned as
 * a local table scan: no tasks, no files). Time travel pins the snapshot the per-snapshot
 * tables describe.
 */
final class LakeSystemTable implements SupportsRead {
  private final LakeOps ops;
  private final Identifier ident;
  private final StructType schema;
  private final Long snapshotId;
  private final Map<String, String> properties = new HashMap<>();

  LakeSystemTable(LakeOps ops, Identifier ident, JsonNode desc) {
    this.ops = ops;
    this.ident = ident;
    this.schema = StructType.fromDDL(desc.get(Key.SCHEMA).asText());
    JsonNode snap = desc.path(Key.SNAPSHOT_ID);
    this.snapshotId = snap.isNumber() ? snap.asLong() : null;
    Iterator<Map.Entry<String, JsonNode>> it = desc.path(Key.PROPERTIES).fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      properties.put(e.getKey(), e.getValue().asText());
    }
  }

  @Override
  public String name() {
    return ops.catalogName + "." + String.join(".", ident.namespace()) + "." + ident.name();
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Map<String, String> properties() {
    return properties;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return this::scan;
  }

  private Scan scan() {
    ObjectNode p = ops.payload(ident);
    if (snapshotId != null) {
      p.put(Key.SNAPSHOT_ID, snapshotId);
    }
    p.put(Key.TIME_ZONE, SQLConf.get().sessionLocalTimeZone());
    JsonNode reply = Bridge.ask(Op.SYSTEM_ROWS, p, null);
    JsonNode rows = reply.path(Key.ROWS);
    InternalRow[] out = new InternalRow[rows.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = (InternalRow) value(rows.get(i), schema);
    }
    String description = name() + (snapshotId != null ? " (snapshot " + snapshotId + ")" : "");
    return new LocalScan() {
      @Override
      public InternalRow[] rows() {
        return out;
      }

      @Override
      public StructType readSchema() {
        return schema;
      }

      @Override
      public String description() {
        return description;
      }
    };
  }

  /** A JSON value of system_service.py's forms as Spark's internal value of type {@code t}. */
  private static Object value(JsonNode v, DataType t) {
    if (v == null || v.isNull()) {
      return null;
    }
    if (t instanceof StringType) {
      return UTF8String.fromString(v.asText());
    }
    if (t instanceof LongType || t instanceof TimestampNTZType) {
      return v.asLong();
    }
    if (t instanceof IntegerType) {
      return v.asInt();
    }
    if (t instanceof BooleanType) {
      return v.asBoolean();
    }
    if (t instanceof ArrayType) {
      DataType element = ((ArrayType) t).elementType();
      Object[] items = new Object[v.size()];
      for (int i = 0; i < items.length; i++) {
        items[i] = value(v.get(i), element);
      }
      return new GenericArrayData(items);
    }
    if (t instanceof StructType) {
      StructField[] fields = ((StructType) t).fields();
      Object[] values = new Object[fields.length];
      for (int i = 0; i < fields.length; i++) {
        values[i] = value(v.get(i), fields[i].dataType());
      }
      return new GenericInternalRow(values);
    }
    throw Bridge.error("lakeskip: system table column type " + t.simpleString()
        + " has no reader", null);
  }
}
