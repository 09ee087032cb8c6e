package lakeskip.jvm.sql;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import lakeskip.jvm.catalog.LakeOps;
import lakeskip.jvm.read.LakeFileIndex;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code CALL <catalog>.sys.<name>(...)}: parameters as Python's procedure registry declares
 * them (named and positional arguments are matched by Spark); the call runs in Python.
 */
public final class LakeProcedure implements UnboundProcedure, BoundProcedure {
  private final LakeOps ops;
  private final String name;
  private final String description;
  private final ProcedureParameter[] parameters;

  public LakeProcedure(LakeOps ops, JsonNode info) {
    this.ops = ops;
    this.name = info.get(Key.NAME).asText();
    this.description = info.path(Key.DESCRIPTION).asText("");
    List<ProcedureParameter> params = new ArrayList<>();
    for (JsonNode p : info.path(Key.PARAMETERS)) {
      ProcedureParameter.Builder b = ProcedureParameter.in(p.get(Key.NAME).asText(), type(p));
      if (!p.path(Key.REQUIRED).asBoolean(false)) {
        b = b.defaultValue("NULL");
      }
      params.add(b.build());
    }
    this.parameters = params.toArray(new ProcedureParameter[0]);
  }

  private static DataType type(JsonNode p) {
    switch (p.path(Key.TYPE).asText("string")) {
      case "bigint":
        return DataTypes.LongType;
      case "boolean":
        return DataTypes.BooleanType;
      default:
        return DataTypes.StringType;
    }
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String description() {
    return description;
  }

  @Override
  public BoundProcedure bind(StructType inputType) {
    return this;
  }

  @Override
  public ProcedureParameter[] parameters() {
    return parameters;
  }

  @Override
  public boolean isDeterministic() {
    return false;
  }

  @Override
  public Iterator<Scan> call(InternalRow input) {
    ObjectNode p = ops.payload();
    p.put(Key.PROCEDURE, name);
    ObjectNode args = p.putObject(Key.ARGUMENTS);
    for (int i = 0; i < parameters.length; i++) {
      if (input.isNullAt(i)) {
        continue;
      }
      DataType t = parameters[i].dataType();
      String n = parameters[i].name();
      if (t instanceof LongType) {
        args.put(n, input.getLong(i));
      } else if (t instanceof BooleanType) {
        args.put(n, input.getBoolean(i));
      } else {
        args.put(n, input.getUTF8String(i).toString());
      }
    }
    // the calling session: its settings, current namespace and jobs are the procedure's (one
    // brain serves every session of the JVM)
    org.apache.spark.sql.SparkSession session = org.apache.spark.sql.SparkSession.active();
    org.apache.spark.sql.connector.catalog.CatalogManager manager =
        ((org.apache.spark.sql.classic.SparkSession) session).sessionState().catalogManager();
    if (manager.currentCatalog().name().equals(ops.catalogName)) {
      com.fasterxml.jackson.databind.node.ArrayNode ns = p.putArray(Key.CURRENT_NAMESPACE);
      for (String n : manager.currentNamespace()) {
        ns.add(n);
      }
    }
    JsonNode r = Bridge.ask(Op.CALL_PROCEDURE, p, session);
    final StructType schema = StructType.fromDDL(r.get(Key.SCHEMA).asText());
    List<InternalRow> rows = new ArrayList<>();
    for (JsonNode row : r.path(Key.ROWS)) {
      Object[] values = new Object[schema.fields().length];
      for (int i = 0; i < values.length; i++) {
        values[i] = cell(schema.fields()[i], row.get(i));
      }
      rows.add(new GenericInternalRow(values));
    }
    return localScan(schema, rows);
  }

  /** A procedure result: {@code rows} of {@code schema}. */
  static Iterator<Scan> localScan(StructType schema, List<InternalRow> rows) {
    final InternalRow[] out = rows.toArray(new InternalRow[0]);
    Scan scan =
        new LocalScan() {
          @Override
          public InternalRow[] rows() {
            return out;
          }

          @Override
          public StructType readSchema() {
            return schema;
          }
        };
    return Collections.singletonList(scan).iterator();
  }

  private static Object cell(StructField f, JsonNode v) {
    return internal(f.dataType(), v);
  }

  /**
   * A result value in Spark's internal form, of any type: JSON arrays for arrays, arrays of
   * {@code [key, value]} pairs for maps, field arrays (or objects by field name) for structs,
   * scalars as {@link LakeFileIndex#value} reads partition values (dates in days, timestamps
   * in microseconds, decimals as text, binary as base64).
   */
  static Object internal(DataType t, JsonNode v) {
    if (v == null || v.isNull()) {
      return null;
    }
    if (t instanceof ArrayType) {
      DataType e = ((ArrayType) t).elementType();
      Object[] items = new Object[v.size()];
      for (int i = 0; i < items.length; i++) {
        items[i] = internal(e, v.get(i));
      }
      return new GenericArrayData(items);
    }
    if (t instanceof MapType) {
      MapType m = (MapType) t;
      Object[] keys = new Object[v.size()];
      Object[] values = new Object[v.size()];
      for (int i = 0; i < keys.length; i++) {
        keys[i] = internal(m.keyType(), v.get(i).get(0));
        values[i] = internal(m.valueType(), v.get(i).get(1));
      }
      return new ArrayBasedMapData(new GenericArrayData(keys), new GenericArrayData(values));
    }
    if (t instanceof StructType) {
      StructField[] fields = ((StructType) t).fields();
      Object[] values = new Object[fields.length];
      for (int i = 0; i < fields.length; i++) {
        JsonNode x = v.isArray() ? v.get(i) : v.get(fields[i].name());
        values[i] = internal(fields[i].dataType(), x);
      }
      return new GenericInternalRow(values);
    }
    if (t instanceof StringType) {
      return UTF8String.fromString(v.isTextual() ? v.asText() : v.toString());
    }
    if (t instanceof IntegerType) {
      return v.asInt();
    }
    return LakeFileIndex.value(t, v);
  }
}
