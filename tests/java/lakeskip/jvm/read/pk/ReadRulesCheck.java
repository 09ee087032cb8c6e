package lakeskip.jvm.read.pk;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import lakeskip.jvm.cache.CacheKeyCheck;
import lakeskip.jvm.read.PredicateJson;
import org.apache.spark.paths.SparkPath;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.FieldReference;
import org.apache.spark.sql.connector.expressions.LiteralValue;
import org.apache.spark.sql.connector.expressions.filter.And;
import org.apache.spark.sql.connector.expressions.filter.Not;
import org.apache.spark.sql.connector.expressions.filter.Or;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.FilePartition;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType$;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType$;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The read side's rules without a Spark session (driven by tests/unit/spark/
 * test_java_read_rules.py): {@code java ReadRulesCheck in.json out.json}.
 *
 * <p>{@code merge}: each case's versions through {@link PkMerge#of} (the rule Python sends,
 * {@code MergeEngine.to_json}) and {@link PkMerge#merge}, per key, in the given order and
 * reversed; the rows (or the error) are written back for Python to compare with the case table.
 *
 * <p>{@code dv}: each case's files through {@link LakeDvScan}'s reader factory over an inner
 * reader that returns each row with its position, skipping the row groups Python says hold no
 * match (as Parquet's statistics would), with the DV bytes Python's planner sends; the rows
 * it returns are written back (Python then applies the WHERE, as Spark does after the scan).
 *
 * <p>{@code literals} / {@code predicates}: Spark V2 predicates through {@link PredicateJson}
 * (each literal type, and the tree shapes), for Python's reader to read back.
 */
public final class ReadRulesCheck {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ReadRulesCheck() {}

  public static void main(String[] args) throws IOException {
    JsonNode in = JSON.readTree(new File(args[0]));
    ObjectNode out = JSON.createObjectNode();
    ObjectNode merged = out.putObject("merge");
    for (JsonNode c : in.path("merge")) {
      merged.set(c.get("name").asText(), mergeCase(c));
    }
    ObjectNode dv = out.putObject("dv");
    for (JsonNode c : in.path("dv")) {
      dv.set(c.get("name").asText(), dvCase(c));
    }
    out.set("literals", literals(in.path("literals")));
    out.set("predicates", PredicateJson.predicates(predicates()));
    out.set("cache_keys", CacheKeyCheck.run(JSON));
    JSON.writeValue(new File(args[1]), out);
  }

  // ---- primary-key merge

  private static JsonNode mergeCase(JsonNode c) {
    List<StructField> cols = new ArrayList<>();
    for (JsonNode col : c.get("columns")) {
      cols.add(new StructField(col.get(0).asText(), DataType.fromDDL(col.get(1).asText()), true,
          Metadata.empty()));
    }
    StructType out = new StructType(cols.toArray(new StructField[0]));
    List<StructField> file = new ArrayList<>();
    file.add(new StructField(LakePkScan.SEQUENCE, LongType$.MODULE$, true, Metadata.empty()));
    file.add(new StructField(LakePkScan.KIND, ByteType$.MODULE$, true, Metadata.empty()));
    file.addAll(cols);
    StructType got = new StructType(file.toArray(new StructField[0]));
    PkMerge rule = PkMerge.of(c.get("merge"), got, out, false);
    Map<String, List<InternalRow>> byKey = new LinkedHashMap<>();
    for (JsonNode v : c.get("versions")) {
      Object[] values = new Object[got.fields().length];
      values[0] = v.get("seq").asLong();
      values[1] = (byte) v.get("kind").asInt();
      for (int i = 0; i < cols.size(); i++) {
        values[i + 2] = internal(cols.get(i).dataType(), v.get("row").path(cols.get(i).name()));
      }
      byKey.computeIfAbsent(v.get("row").path(c.get("key").asText()).toString(),
          k -> new ArrayList<>()).add(new GenericInternalRow(values));
    }
    ObjectNode result = JSON.createObjectNode();
    ArrayNode rows = result.putArray("rows");
    try {
      for (List<InternalRow> versions : byKey.values()) {
        List<InternalRow> reversed = new ArrayList<>(versions);
        Collections.reverse(reversed);
        InternalRow row = rule.merge(new ArrayList<>(versions));
        InternalRow again = rule.merge(reversed);
        JsonNode a = row == null ? null : json(out, row);
        JsonNode b = again == null ? null : json(out, again);
        if (a == null ? b != null : !a.equals(b)) {
          result.put("order_matters", a + " vs " + b);
        }
        if (a != null) {
          rows.add(a);
        }
      }
    } catch (IOException e) {
      result.remove("rows");
      result.put("error", e.getMessage());
    }
    return result;
  }

  private static Object internal(DataType t, JsonNode v) {
    if (v == null || v.isNull() || v.isMissingNode()) {
      return null;
    }
    if (t instanceof IntegerType) {
      return v.asInt();
    } else if (t instanceof LongType) {
      return v.asLong();
    } else if (t instanceof BooleanType) {
      return v.asBoolean();
    } else if (t instanceof DoubleType) {
      return v.asDouble();
    } else if (t instanceof FloatType) {
      return (float) v.asDouble();
    } else if (t instanceof StringType) {
      return UTF8String.fromString(v.asText());
    } else if (t instanceof DecimalType) {
      DecimalType d = (DecimalType) t;
      return Decimal.apply(new BigDecimal(v.asText()), d.precision(), d.scale());
    }
    throw new IllegalArgumentException("no test value for " + t);
  }

  private static ArrayNode json(StructType schema, InternalRow row) {
    ArrayNode a = JSON.createArrayNode();
    for (int i = 0; i < schema.fields().length; i++) {
      DataType t = schema.fields()[i].dataType();
      if (row.isNullAt(i)) {
        a.addNull();
      } else if (t instanceof IntegerType) {
        a.add(row.getInt(i));
      } else if (t instanceof LongType) {
        a.add(row.getLong(i));
      } else if (t instanceof BooleanType) {
        a.add(row.getBoolean(i));
      } else if (t instanceof DoubleType) {
        a.add(row.getDouble(i));
      } else if (t instanceof FloatType) {
        a.add(new BigDecimal(Float.toString(row.getFloat(i))));
      } else if (t instanceof StringType) {
        a.add(row.getUTF8String(i).toString());
      } else if (t instanceof DecimalType) {
        DecimalType d = (DecimalType) t;
        a.add(row.getDecimal(i, d.precision(), d.scale()).toJavaBigDecimal().toPlainString());
      } else {
        throw new IllegalArgumentException("no test value for " + t);
      }
    }
    return a;
  }

  // ---- predicate conversion (PredicateJson)

  /** {@code c = <literal>} for each literal Python names (Spark type DDL, value). */
  private static ArrayNode literals(JsonNode specs) {
    List<Predicate> out = new ArrayList<>();
    for (JsonNode s : specs) {
      DataType t = s.get("type").asText().equals("void")
          ? DataTypes.NullType : DataType.fromDDL(s.get("type").asText());
      out.add(new Predicate("=", new Expression[] {
          Expressions.column("c"), new LiteralValue<>(literalValue(t, s.get("value")), t)}));
    }
    return PredicateJson.predicates(out.toArray(new Predicate[0]));
  }

  private static Object literalValue(DataType t, JsonNode v) {
    if (v.isNull()) {
      return null;
    } else if (t instanceof ByteType) {
      return (byte) v.asInt();
    } else if (t instanceof ShortType) {
      return (short) v.asInt();
    } else if (t instanceof IntegerType || t instanceof DateType) {
      return v.asInt();
    } else if (t instanceof LongType || t instanceof TimestampType
        || t instanceof TimestampNTZType) {
      return v.asLong();
    } else if (t instanceof FloatType) {
      return Float.parseFloat(v.asText());
    } else if (t instanceof DoubleType) {
      return Double.parseDouble(v.asText());
    } else if (t instanceof BinaryType) {
      return Base64.getDecoder().decode(v.asText());
    }
    return internal(t, v);
  }

  /** The tree shapes: nested references, AND / OR / NOT, IN, IS_NULL, an untranslatable. */
  private static Predicate[] predicates() {
    Expression a = Expressions.column("a");
    Expression nested = FieldReference.apply("st.inner");
    Expression five = Expressions.literal(5L);
    Predicate eq = new Predicate("=", new Expression[] {a, five});
    Predicate starts = new Predicate("STARTS_WITH",
        new Expression[] {Expressions.column("s"), Expressions.literal(UTF8String.fromString("x"))});
    return new Predicate[] {
      new And(eq, new Not(starts)),
      new Or(new Predicate("IS_NULL", new Expression[] {nested}),
          new Predicate("IN", new Expression[] {a, Expressions.literal(1L), Expressions.literal(2L)})),
      new Predicate("<", new Expression[] {
          Expressions.apply("UPPER", Expressions.column("s")), Expressions.literal(UTF8String.fromString("X"))}),
    };
  }

  // ---- deletion vectors

  private static JsonNode dvCase(JsonNode c) throws IOException {
    StructType full = new StructType()
        .add("id", DataTypes.LongType, true)
        .add("v", DataTypes.IntegerType, true)
        .add(LakeDvScan.ROW_INDEX, DataTypes.LongType, true);
    Map<String, JsonNode> files = new HashMap<>();
    Map<String, byte[]> vectors = new HashMap<>();
    List<PartitionedFile> parts = new ArrayList<>();
    for (JsonNode f : c.get("files")) {
      String name = f.get("name").asText();
      files.put(name, f);
      if (f.hasNonNull("dv")) {
        vectors.put(name, Base64.getDecoder().decode(f.get("dv").asText()));
      }
      parts.add(new PartitionedFile(InternalRow.empty(),
          SparkPath.fromPathString("/warehouse/t/bucket-0/" + name), 0L, 0L, new String[0], 0L,
          0L, scala.collection.immutable.Map$.MODULE$.<String, Object>empty()));
    }
    PartitionReaderFactory dv = new LakeDvScan.Factory(new InMemory(files), vectors, full,
        full.fieldIndex(LakeDvScan.ROW_INDEX));
    ArrayNode rows = JSON.createArrayNode();
    try (PartitionReader<InternalRow> r =
        dv.createReader(new FilePartition(0, parts.toArray(new PartitionedFile[0])))) {
      while (r.next()) {
        InternalRow row = r.get();
        if (row.numFields() != 2) {
          throw new IllegalStateException("the row index was not projected away");
        }
        ArrayNode a = rows.addArray();
        a.add(row.getLong(0));
        if (row.isNullAt(1)) {
          a.addNull();
        } else {
          a.add(row.getInt(1));
        }
      }
    }
    return rows;
  }

  /**
   * Parquet as the DV reader sees it: each row with its position in its file, whole row groups
   * skipped where statistics rule out a match ({@code match}: Python's WHERE per row).
   */
  private static final class InMemory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final Map<String, JsonNode> files;

    InMemory(Map<String, JsonNode> files) {
      this.files = files;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      PartitionedFile pf = ((FilePartition) partition).files()[0];
      JsonNode f = files.get(pf.toPath().getName());
      JsonNode rows = f.get("rows");
      JsonNode match = f.get("match");
      int group = f.path("row_group_rows").asInt(Math.max(1, rows.size()));
      List<InternalRow> out = new ArrayList<>();
      for (int start = 0; start < rows.size(); start += group) {
        int end = Math.min(rows.size(), start + group);
        boolean any = false;
        for (int i = start; i < end; i++) {
          any |= match.get(i).asBoolean();
        }
        for (int i = start; any && i < end; i++) {
          JsonNode r = rows.get(i);
          out.add(new GenericInternalRow(new Object[] {
              r.get(0).asLong(), r.get(1).isNull() ? null : r.get(1).asInt(), (long) i}));
        }
      }
      return new PartitionReader<InternalRow>() {
        private int next = -1;

        @Override
        public boolean next() {
          return ++next < out.size();
        }

        @Override
        public InternalRow get() {
          return out.get(next);
        }

        @Override
        public void close() {}
      };
    }
  }
}
