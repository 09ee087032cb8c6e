package lakeskip.jvm.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import lakeskip.jvm.bridge.Protocol.TableKindTag;
import lakeskip.jvm.bridge.Protocol.TableProperty;
import lakeskip.jvm.cache.ScanCache;
import lakeskip.jvm.read.LakeAuditScan;
import lakeskip.jvm.read.LakeScanBuilder;
import lakeskip.jvm.write.LakeWriteBuilder;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TruncatableTable;
import org.apache.spark.sql.connector.expressions.FieldReference$;
import org.apache.spark.sql.connector.expressions.LogicalExpressions;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** One lakeskip table (optionally pinned to a snapshot by time travel), as Python described it. */
public class LakeTable
    implements SupportsRead, SupportsWrite, TruncatableTable,
        org.apache.spark.sql.connector.catalog.SupportsPartitionManagement,
        org.apache.spark.sql.connector.catalog.SupportsSchemaEvolution {
  public final LakeOps ops;
  public final Identifier ident;
  public final StructType schema;
  public final List<String> partitionKeys = new ArrayList<>();
  /** How its rows live in its files (Python's {@code lakeskip.catalog.kind.TableKind}). */
  public final TableKindTag kind;
  /** The key a merge-on-read table merges by: its key minus its partition columns. */
  public final List<String> trimmedKeys = new ArrayList<>();
  final Map<String, String> properties = new HashMap<>();
  public final Long snapshotId;
  /** The id of the schema {@link #schema} is of (null: not given). */
  public final Long schemaId;
  public final boolean pinned;
  final String location;
  /** Names the schema and snapshot Python loaded ({@link ScanCache}); "" when not given. */
  public final String token;
  /** A system table read through this scan ({@code t$read_optimized}, {@code t$audit_log}):
   * read-only. */
  public final String system;
  /** Rows in the loaded snapshot (null: not given); {@code LakeJoinKeys} compares tables. */
  public final Long recordCount;

  LakeTable(LakeOps ops, Identifier ident, JsonNode desc) {
    this.ops = ops;
    this.ident = ident;
    this.schema = parseSchema(desc.get(Key.SCHEMA).asText());
    for (JsonNode k : desc.path(Key.PARTITION_KEYS)) {
      partitionKeys.add(k.asText());
    }
    this.kind = TableKindTag.of(desc.path(Key.KIND).asText());
    for (JsonNode k : desc.path(Key.TRIMMED_KEYS)) {
      trimmedKeys.add(k.asText());
    }
    Iterator<Map.Entry<String, JsonNode>> it = desc.path(Key.PROPERTIES).fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      properties.put(e.getKey(), e.getValue().asText());
    }
    JsonNode snap = desc.path(Key.SNAPSHOT_ID);
    this.snapshotId = snap.isNumber() ? snap.asLong() : null;
    JsonNode schemaId = desc.path(Key.SCHEMA_ID);
    this.schemaId = schemaId.isNumber() ? schemaId.asLong() : null;
    this.pinned = desc.path(Key.PINNED).asBoolean(false);
    this.location = desc.path(Key.LOCATION).asText("");
    this.token = desc.path(Key.TOKEN).asText("");
    this.system = desc.path(Key.SYSTEM).asText("");
    JsonNode rows = desc.path(Key.RECORD_COUNT);
    this.recordCount = rows.isNumber() ? rows.asLong() : null;
  }

  /** Parsed schemas by DDL: StructType is immutable, and Spark's SQL parser costs about a
   * millisecond per table load, paid by every query. */
  private static final Map<String, StructType> SCHEMAS = new ConcurrentHashMap<>();

  private static StructType parseSchema(String ddl) {
    StructType hit = SCHEMAS.get(ddl);
    if (hit == null) {
      hit = StructType.fromDDL(ddl);
      if (SCHEMAS.size() >= 256) {
        SCHEMAS.clear();
      }
      SCHEMAS.put(ddl, hit);
    }
    return hit;
  }

  @Override
  public String name() {
    return ops.catalogName + "." + String.join(".", ident.namespace()) + "." + ident.name();
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return audit() ? LakeAuditScan.schema(schema) : schema;
  }

  /** {@code t$audit_log}: rowkind first, every version kept ({@link LakeAuditScan}). */
  public boolean audit() {
    return "audit_log".equals(system);
  }

  /**
   * Read by merging the versions of each key ({@code LakePkScan}, by {@link #trimmedKeys});
   * false: read as its files are, minus their deletion vectors. {@code t$read_optimized}
   * reads the files of a merge-on-read table without a merge, as Paimon does.
   */
  public boolean readByMerge() {
    return switch (kind) {
      case PK_MERGE -> !"read_optimized".equals(system);
      case APPEND, APPEND_DV, PK_RAW -> false;
    };
  }

  /** A primary-key table (its files are key-value files with {@code _VALUE_KIND}). */
  public boolean primaryKey() {
    return switch (kind) {
      case PK_MERGE, PK_RAW -> true;
      case APPEND, APPEND_DV -> false;
    };
  }

  @Override
  public StructType partitionSchema() {
    List<StructField> fields = new ArrayList<>();
    for (String k : partitionKeys) {
      fields.add(schema.apply(k));
    }
    return new StructType(fields.toArray(new StructField[0]));
  }

  public StructType dataSchema() {
    List<StructField> fields = new ArrayList<>();
    for (StructField f : schema.fields()) {
      if (!partitionKeys.contains(f.name())) {
        fields.add(f);
      }
    }
    return new StructType(fields.toArray(new StructField[0]));
  }

  @Override
  public Transform[] partitioning() {
    Transform[] out = new Transform[partitionKeys.size()];
    for (int i = 0; i < out.length; i++) {
      // the name as it is (Expressions.identity(String) would parse it: a dot, a space or a
      // backquote in a column name is no SQL)
      out[i] = LogicalExpressions.identity(FieldReference$.MODULE$.column(partitionKeys.get(i)));
    }
    return out;
  }

  /** The table's properties plus, asked once, its state (snapshot, files, rows, indexes). */
  private volatile Map<String, String> detailed;

  /**
   * The table options plus its state at this table's snapshot as {@code lakeskip.*}
   * properties ({@code table_detail}): what {@code DESCRIBE TABLE EXTENDED} and {@code SHOW
   * TBLPROPERTIES} list. Asked of Python once per loaded table, when first needed (a query
   * does not ask: the callback counts in the Spark tests check it); a failure leaves the
   * options alone.
   */
  @Override
  public Map<String, String> properties() {
    Map<String, String> d = detailed;
    if (d == null) {
      d = new HashMap<>(properties);
      com.fasterxml.jackson.databind.node.ObjectNode p = ops.payload(ident);
      if (snapshotId != null) {
        p.put(Key.SNAPSHOT_ID, snapshotId);
      }
      try {
        Iterator<Map.Entry<String, JsonNode>> it =
            Bridge.call(Op.TABLE_DETAIL, p, null).path(Key.PROPERTIES).fields();
        while (it.hasNext()) {
          Map.Entry<String, JsonNode> e = it.next();
          d.put(e.getKey(), e.getValue().asText());
        }
      } catch (RuntimeException e) {
        d.put(TableProperty.STATE, "unavailable: " + Bridge.firstLine(e.getMessage()));
      }
      detailed = d;
    }
    return d;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(
        TableCapability.BATCH_READ,
        TableCapability.MICRO_BATCH_READ,
        TableCapability.V1_BATCH_WRITE,
        TableCapability.STREAMING_WRITE,
        TableCapability.TRUNCATE,
        TableCapability.OVERWRITE_BY_FILTER,
        // dynamic overwrite: Spark's capability check asks for BATCH_WRITE there (not V1's);
        // every write is still the V1 write (Spark plans by the Write's type, and
        // LakeDmlStrategy plans the dynamic one)
        TableCapability.BATCH_WRITE,
        TableCapability.OVERWRITE_DYNAMIC,
        // a write with schema evolution (mergeSchema: LakeMergeSchema) adds its new columns
        // through alterTable; which changes it may make: supportsColumnChange
        TableCapability.AUTOMATIC_SCHEMA_EVOLUTION,
        // Spark's MergeSubplans may fuse scans of this table that differ only in their columns
        // and post-scan filters (TPC-DS q9: 15 scalar subqueries over one fact table read it 5
        // times, not 15, as they do over plain Parquet). Spark rebuilds the merged scan through
        // newScanBuilder with OR(filters) offered and keeps each side's filter above the scan;
        // it merges only scans whose fully enforced filters are equal
        TableCapability.SCAN_MERGING);
  }

  /**
   * A write with schema evolution adds columns only (as Paimon's {@code write.merge-schema}
   * without its type-widening option): a column whose type differs is cast to the table's
   * type by Spark's output resolution instead (a Python int DataFrame into an INT column
   * does not widen the table).
   */
  @Override
  public boolean supportsColumnChange(
      org.apache.spark.sql.connector.catalog.TableChange.ColumnChange change) {
    return change instanceof org.apache.spark.sql.connector.catalog.TableChange.AddColumn;
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new LakeScanBuilder(this, options);
  }

  /**
   * {@code TRUNCATE TABLE}, as Paimon's: one OVERWRITE snapshot that removes every file and
   * adds none (nothing when the table has no rows). The write path's truncate mode over no
   * rows, so it is the same commit as {@code INSERT OVERWRITE} of an empty query.
   */
  @Override
  public boolean truncateTable() {
    WriteBuilder b = newWriteBuilder(null);
    org.apache.spark.sql.SparkSession s = org.apache.spark.sql.SparkSession.active();
    ((org.apache.spark.sql.connector.write.V1Write) ((LakeWriteBuilder) b).truncate().build())
        .toInsertableRelation()
        .insert(s.createDataFrame(java.util.List.<org.apache.spark.sql.Row>of(), schema), false);
    return true;
  }

  // -- partitions: SHOW PARTITIONS, ALTER TABLE ... DROP PARTITION ------------------------
  // Partition values cross as Spark's internal forms (UTF8String as text, numbers, booleans,
  // dates as days); Python refuses partition column types where lakeskip's differ.

  @Override
  public void createPartition(
      org.apache.spark.sql.catalyst.InternalRow ident, Map<String, String> properties) {
    throw Bridge.error("ALTER TABLE " + name() + " ADD PARTITION: a lakeskip (Paimon) partition"
        + " exists while it holds data; write rows to it instead", null);
  }

  @Override
  public boolean dropPartition(org.apache.spark.sql.catalyst.InternalRow ident) {
    com.fasterxml.jackson.databind.node.ObjectNode p = ops.payload(this.ident);
    com.fasterxml.jackson.databind.node.ArrayNode values = p.putArray(Key.VALUES);
    StructType ps = partitionSchema();
    for (int i = 0; i < ps.size(); i++) {
      Object v = ident.isNullAt(i) ? null : ident.get(i, ps.apply(i).dataType());
      if (v == null) {
        values.addNull();
      } else if (v instanceof Boolean) {
        values.add((Boolean) v);
      } else if (v instanceof Number) {
        values.add(((Number) v).longValue());
      } else {
        values.add(v.toString());
      }
    }
    return Bridge.ask(Op.DROP_PARTITION, p, null).path(Key.DROPPED).asBoolean(false);
  }

  /**
   * {@code TRUNCATE TABLE t PARTITION (...)} with every partition column named: Paimon's
   * truncate of a partition, the OVERWRITE snapshot that removes its files (the commit of
   * {@link #dropPartition}; none when it holds no data). A partition of a lakeskip table
   * exists while it holds data, so it is gone afterwards, as after DROP PARTITION.
   */
  @Override
  public boolean truncatePartition(org.apache.spark.sql.catalyst.InternalRow ident) {
    dropPartition(ident);
    return true;
  }

  @Override
  public void replacePartitionMetadata(
      org.apache.spark.sql.catalyst.InternalRow ident, Map<String, String> properties) {
    throw Bridge.error(name() + ": lakeskip partitions have no metadata to set", null);
  }

  @Override
  public Map<String, String> loadPartitionMetadata(
      org.apache.spark.sql.catalyst.InternalRow ident) {
    return new HashMap<>();
  }

  @Override
  public org.apache.spark.sql.catalyst.InternalRow[] listPartitionIdentifiers(
      String[] names, org.apache.spark.sql.catalyst.InternalRow ident) {
    StructType ps = partitionSchema();
    int[] at = new int[names.length];
    for (int i = 0; i < names.length; i++) {
      at[i] = ps.fieldIndex(names[i]);
    }
    List<org.apache.spark.sql.catalyst.InternalRow> out = new ArrayList<>();
    for (JsonNode row : Bridge.ask(Op.LIST_PARTITIONS, ops.payload(this.ident), null)
        .path(Key.ROWS)) {
      Object[] values = new Object[ps.size()];
      for (int i = 0; i < values.length; i++) {
        values[i] = internal(row.get(i), ps.apply(i).dataType());
      }
      org.apache.spark.sql.catalyst.InternalRow r =
          new org.apache.spark.sql.catalyst.expressions.GenericInternalRow(values);
      boolean match = true;
      for (int i = 0; i < at.length && match; i++) {
        org.apache.spark.sql.types.DataType t = ps.apply(at[i]).dataType();
        Object want = ident.isNullAt(i) ? null : ident.get(i, t);
        match = java.util.Objects.equals(values[at[i]], want);
      }
      if (match) {
        out.add(r);
      }
    }
    return out.toArray(new org.apache.spark.sql.catalyst.InternalRow[0]);
  }

  private static Object internal(JsonNode v, org.apache.spark.sql.types.DataType t) {
    if (v == null || v.isNull()) {
      return null;
    }
    if (t instanceof org.apache.spark.sql.types.StringType) {
      return org.apache.spark.unsafe.types.UTF8String.fromString(v.asText());
    }
    if (t instanceof org.apache.spark.sql.types.BooleanType) {
      return v.asBoolean();
    }
    if (t instanceof org.apache.spark.sql.types.LongType) {
      return v.asLong();
    }
    if (t instanceof org.apache.spark.sql.types.ShortType) {
      return (short) v.asInt();
    }
    if (t instanceof org.apache.spark.sql.types.ByteType) {
      return (byte) v.asInt();
    }
    return v.asInt(); // INT, DATE (days)
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    if (pinned) {
      throw Bridge.error("cannot write to " + name() + " at an older snapshot (time travel)", null);
    }
    if (!system.isEmpty()) {
      throw Bridge.error("cannot write to " + name() + ": system tables are read-only", null);
    }
    // no info: TRUNCATE TABLE's own batch write (truncateTable), never a streaming one
    return new LakeWriteBuilder(this, info == null ? null : info.queryId());
  }
}
