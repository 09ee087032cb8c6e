package lakeskip.jvm.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import lakeskip.jvm.LakeCatalog;
import lakeskip.jvm.LakeSessionCatalog;
import lakeskip.jvm.bridge.Brain;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.ColumnChangeKind;
import lakeskip.jvm.bridge.Protocol.ErrorKind;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import lakeskip.jvm.bridge.Protocol.TableProperty;
import lakeskip.jvm.sql.LakeExplain;
import lakeskip.jvm.sql.LakeProcedure;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.CatalogV2Util;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Catalog operations shared by {@link LakeCatalog} and {@link LakeSessionCatalog}: each one
 * is a single callback; Python owns the catalog on disk.
 */
public final class LakeOps {
  public final String catalogName;
  final String warehouse;

  public LakeOps(String catalogName, CaseInsensitiveStringMap options) {
    this.catalogName = catalogName;
    this.warehouse = options.get("warehouse");  // the catalog option
    Brain.configure(options);
  }

  public ObjectNode payload() {
    ObjectNode n = Bridge.obj();
    n.put(Key.CATALOG, catalogName);
    if (warehouse != null) {
      n.put(Key.WAREHOUSE, warehouse);
    }
    return n;
  }

  public ObjectNode payload(Identifier ident) {
    ObjectNode n = payload();
    ArrayNode ns = n.putArray(Key.NAMESPACE);
    for (String s : ident.namespace()) {
      ns.add(s);
    }
    n.put(Key.NAME, ident.name());
    return n;
  }

  ObjectNode payload(String[] namespace) {
    ObjectNode n = payload();
    ArrayNode ns = n.putArray(Key.NAMESPACE);
    for (String s : namespace) {
      ns.add(s);
    }
    return n;
  }

  public JsonNode call(String op, ObjectNode payload) {
    return Bridge.ask(op, payload, null);
  }

  /**
   * The Spark exception for a Python error kind of a table operation on {@code ident}, or
   * null (a readable AnalysisException then).
   */
  static Exception tableError(String kind, Identifier ident) {
    switch (kind) {
      case ErrorKind.TABLE_ALREADY_EXISTS:
        return new TableAlreadyExistsException(ident);
      case ErrorKind.TABLE_NOT_FOUND:
        return Bridge.noSuchTable(ident);
      case ErrorKind.DATABASE_NOT_FOUND:
        return Bridge.noSuchNamespace(ident.namespace());
      default:
        return null;
    }
  }

  // -- tables ----------------------------------------------------------------------------

  public boolean isLakeTable(Identifier ident) {
    if (ident.namespace().length != 1) {
      return false;
    }
    return call(Op.TABLE_EXISTS, payload(ident)).path(Key.EXISTS).asBoolean(false);
  }

  public org.apache.spark.sql.connector.catalog.Table loadTable(
      Identifier ident, String version, Long timestampMicros) throws NoSuchTableException {
    boolean system = ident.name().indexOf('$') > 0;  // t$snapshots: LakeSystemTable
    boolean latest = version == null && timestampMicros == null && !system;
    if (latest) {
      LakeTable cached = TableCache.get(this, ident);
      if (cached != null) {
        return cached;
      }
    }
    ObjectNode p = payload(ident);
    if (version != null) {
      p.put(Key.VERSION, version);
    }
    if (timestampMicros != null) {
      p.put(Key.TIMESTAMP_MICROS, timestampMicros);
    }
    // loadTable may throw only NoSuchTableException: a missing database is a missing table
    JsonNode r = Bridge.ask(Op.LOAD_TABLE, p, null, kind ->
        kind.equals(ErrorKind.TABLE_NOT_FOUND) || kind.equals(ErrorKind.DATABASE_NOT_FOUND)
            || kind.equals(ErrorKind.INVALID_ARGUMENT) && ident.namespace().length != 1
            ? Bridge.noSuchTable(ident) : null);
    if (r.has(Key.SYSTEM) && !r.has(Key.TOKEN)) {
      return new LakeSystemTable(this, ident, r);
    }
    LakeTable table = new LakeTable(this, ident, r);
    if (latest) {
      TableCache.put(this, ident, table, r);
    }
    return table;
  }

  /**
   * The columns as a schema; a clause a lakeskip table cannot keep (DEFAULT, GENERATED ALWAYS
   * AS, IDENTITY) is an error naming it, never dropped. As spark_catalog lakeskip inherits
   * Spark's capabilities (column defaults), so Spark does not refuse these itself.
   */
  public static StructType lakeColumns(Identifier ident, Column[] columns) {
    for (Column c : columns) {
      String clause = null;
      if (c.defaultValue() != null) {
        clause = "DEFAULT " + c.defaultValue().getSql();
      } else if (c.generationExpression() != null) {
        clause = "GENERATED ALWAYS AS (" + c.generationExpression() + ")";
      } else if (c.identityColumnSpec() != null) {
        clause = "GENERATED AS IDENTITY";
      }
      if (clause != null) {
        throw Bridge.error(
            "CREATE TABLE " + ident + ": column " + c.name() + ": " + clause
                + " is not supported (only NOT NULL, COMMENT)",
            null);
      }
    }
    return CatalogV2Util.v2ColumnsToStructType(columns);
  }

  /**
   * The table properties with a PRIMARY KEY constraint written as Paimon's {@code primary-key}
   * option; any other constraint (CHECK, UNIQUE, FOREIGN KEY) is an error, never dropped.
   */
  public static Map<String, String> withPrimaryKey(
      Map<String, String> properties,
      org.apache.spark.sql.connector.catalog.constraints.Constraint[] constraints) {
    if (constraints == null || constraints.length == 0) {
      return properties;
    }
    Map<String, String> out = new java.util.HashMap<>(properties);
    for (org.apache.spark.sql.connector.catalog.constraints.Constraint c : constraints) {
      if (!(c instanceof org.apache.spark.sql.connector.catalog.constraints.PrimaryKey)) {
        throw Bridge.error(
            "lakeskip tables support only PRIMARY KEY constraints, not " + c.toDDL(), null);
      }
      List<String> cols = new java.util.ArrayList<>();
      for (NamedReference r :
          ((org.apache.spark.sql.connector.catalog.constraints.PrimaryKey) c).columns()) {
        cols.add(topLevel(r, "PRIMARY KEY"));
      }
      String keys = String.join(",", cols);
      String given = out.get(TableProperty.PRIMARY_KEY);
      if (given != null && !given.replace(" ", "").equalsIgnoreCase(keys)) {
        throw Bridge.error(
            "primary key given twice: PRIMARY KEY (" + keys + ") and 'primary-key' = '"
                + given + "'", null);
      }
      out.put(TableProperty.PRIMARY_KEY, keys);
    }
    return out;
  }

  public LakeTable createTable(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    ObjectNode p = payload(ident);
    fillCreate(p, schema, partitions, properties);
    return new LakeTable(
        this, ident, Bridge.ask(Op.CREATE_TABLE, p, null, kind -> tableError(kind, ident)));
  }

  /**
   * {@code CREATE TABLE ident LIKE source}: Python copies the source's schema, keys and
   * options (the statement's properties over them). The source must be a lakeskip table of
   * this catalog; anything else is refused in one line.
   */
  public LakeTable createTableLike(Identifier ident, Map<String, String> properties, Object source)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    if (!(source instanceof LakeTable)
        || !((LakeTable) source).system.isEmpty()
        || !java.util.Objects.equals(((LakeTable) source).ops.warehouse, warehouse)) {
      String what = source instanceof org.apache.spark.sql.connector.catalog.Table
          ? ((org.apache.spark.sql.connector.catalog.Table) source).name() : "the source";
      throw Bridge.error("CREATE TABLE " + catalogName + "." + String.join(".", ident.namespace())
          + "." + ident.name() + " LIKE " + what + ": the source must be a lakeskip table of "
          + "catalog " + catalogName, null);
    }
    LakeTable src = (LakeTable) source;
    ObjectNode p = payload(ident);
    com.fasterxml.jackson.databind.node.ArrayNode ns = p.putArray(Key.SOURCE_NAMESPACE);
    for (String n : src.ident.namespace()) {
      ns.add(n);
    }
    p.put(Key.SOURCE_NAME, src.ident.name());
    ObjectNode props = p.putObject(Key.PROPERTIES);
    for (Map.Entry<String, String> e : properties.entrySet()) {
      props.put(e.getKey(), e.getValue());
    }
    return new LakeTable(
        this, ident, Bridge.ask(Op.CREATE_TABLE_LIKE, p, null, kind -> tableError(kind, ident)));
  }

  /**
   * CTAS / RTAS: mode is create, replace or create_or_replace. Throws (undeclared) the Spark
   * exceptions the mode can meet: TableAlreadyExistsException (create), NoSuchTableException
   * (replace), NoSuchNamespaceException; each stage method of {@link LakeCatalog} declares
   * those of its mode, as Spark's interface does.
   */
  public LakeStagedTable stageTable(
      Identifier ident,
      StructType schema,
      Transform[] partitions,
      Map<String, String> properties,
      String mode) {
    ObjectNode p = payload(ident);
    fillCreate(p, schema, partitions, properties);
    p.put(Key.MODE, mode);
    JsonNode r = Bridge.ask(Op.STAGE_TABLE, p, null, kind -> tableError(kind, ident));
    return LakeStagedTable.of(this, ident, r, mode);
  }

  /**
   * The column a PRIMARY KEY or PARTITIONED BY reference names, as it is: a top-level column
   * (its name may hold a dot), never a nested field (joined with dots it read as the top-level
   * column "s.x", or as another column literally named so).
   */
  static String topLevel(NamedReference ref, String clause) {
    String[] names = ref.fieldNames();
    if (names.length != 1) {
      throw Bridge.error(clause + " takes top-level columns of a lakeskip table, not the nested"
          + " field " + ref.describe(), null);
    }
    return names[0];
  }

  private static void fillCreate(
      ObjectNode p, StructType schema, Transform[] partitions, Map<String, String> properties) {
    p.put(Key.SCHEMA, schema.json());
    ArrayNode keys = p.putArray(Key.PARTITION_KEYS);
    for (Transform t : partitions) {
      if (!t.name().equals("identity") || t.references().length != 1) {
        throw Bridge.error("lakeskip tables are partitioned by columns only, not " + t.describe(),
            null);
      }
      NamedReference ref = t.references()[0];
      keys.add(topLevel(ref, "PARTITIONED BY"));
    }
    ObjectNode props = p.putObject(Key.PROPERTIES);
    for (Map.Entry<String, String> e : properties.entrySet()) {
      props.put(e.getKey(), e.getValue());
    }
  }

  public LakeTable alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
    ObjectNode p = payload(ident);
    ObjectNode set = p.putObject(Key.SET);
    ArrayNode unset = p.putArray(Key.UNSET);
    ArrayNode columns = p.putArray(Key.COLUMNS);
    for (TableChange c : changes) {
      if (c instanceof TableChange.SetProperty) {
        TableChange.SetProperty s = (TableChange.SetProperty) c;
        set.put(s.property(), s.value());
      } else if (c instanceof TableChange.RemoveProperty) {
        unset.add(((TableChange.RemoveProperty) c).property());
      } else if (c instanceof TableChange.ColumnChange) {
        columns.add(columnChange((TableChange.ColumnChange) c));
      } else {
        throw Bridge.error(
            "ALTER TABLE on a lakeskip table: " + c.getClass().getSimpleName()
                + " is not supported (columns and TBLPROPERTIES are)",
            null);
      }
    }
    TableCache.forget(this, ident);
    JsonNode r = Bridge.ask(Op.ALTER_TABLE, p, null, kind ->
        kind.equals(ErrorKind.TABLE_NOT_FOUND) ? Bridge.noSuchTable(ident) : null);
    return new LakeTable(this, ident, r);
  }

  /** One of Spark's column changes as the protocol's {@code ColumnChange} (Python decides). */
  private static ObjectNode columnChange(TableChange.ColumnChange c) {
    ObjectNode o = Bridge.JSON.createObjectNode();
    ArrayNode names = o.putArray(Key.NAMES);
    for (String n : c.fieldNames()) {
      names.add(n);
    }
    if (c instanceof TableChange.AddColumn) {
      TableChange.AddColumn a = (TableChange.AddColumn) c;
      if (a.defaultValue() != null) {
        throw Bridge.error("ADD COLUMN ... DEFAULT is not supported on lakeskip tables", null);
      }
      o.put(Key.CHANGE, ColumnChangeKind.ADD);
      o.put(Key.SPARK_TYPE, a.dataType().json());
      o.put(Key.NULLABLE, a.isNullable());
      o.put(Key.COMMENT, a.comment());
      position(o, a.position());
    } else if (c instanceof TableChange.RenameColumn) {
      o.put(Key.CHANGE, ColumnChangeKind.RENAME);
      o.put(Key.NEW_NAME, ((TableChange.RenameColumn) c).newName());
    } else if (c instanceof TableChange.DeleteColumn) {
      o.put(Key.CHANGE, ColumnChangeKind.DROP);
    } else if (c instanceof TableChange.UpdateColumnType) {
      o.put(Key.CHANGE, ColumnChangeKind.TYPE);
      o.put(Key.SPARK_TYPE, ((TableChange.UpdateColumnType) c).newDataType().json());
    } else if (c instanceof TableChange.UpdateColumnNullability) {
      o.put(Key.CHANGE, ColumnChangeKind.NULLABILITY);
      o.put(Key.NULLABLE, ((TableChange.UpdateColumnNullability) c).nullable());
    } else if (c instanceof TableChange.UpdateColumnComment) {
      o.put(Key.CHANGE, ColumnChangeKind.COMMENT);
      o.put(Key.COMMENT, ((TableChange.UpdateColumnComment) c).newComment());
    } else if (c instanceof TableChange.UpdateColumnPosition) {
      o.put(Key.CHANGE, ColumnChangeKind.POSITION);
      position(o, ((TableChange.UpdateColumnPosition) c).position());
    } else {
      throw Bridge.error(
          "ALTER TABLE on a lakeskip table: " + c.getClass().getSimpleName() + " is not supported",
          null);
    }
    return o;
  }

  private static void position(ObjectNode o, TableChange.ColumnPosition position) {
    if (position instanceof TableChange.First) {
      o.put(Key.POSITION, "FIRST");
    } else if (position instanceof TableChange.After) {
      o.put(Key.POSITION, "AFTER");
      o.put(Key.AFTER, ((TableChange.After) position).column());
    }
  }

  public boolean dropTable(Identifier ident) {
    TableCache.forget(this, ident);
    return call(Op.DROP_TABLE, payload(ident)).path(Key.DROPPED).asBoolean(false);
  }

  public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
    JsonNode r = Bridge.ask(Op.LIST_TABLES, payload(namespace), null, kind ->
        kind.equals(ErrorKind.DATABASE_NOT_FOUND) ? Bridge.noSuchNamespace(namespace) : null);
    List<Identifier> out = new ArrayList<>();
    for (JsonNode t : r.path(Key.TABLES)) {
      out.add(Identifier.of(namespace, t.asText()));
    }
    return out.toArray(new Identifier[0]);
  }

  // -- namespaces ------------------------------------------------------------------------

  public String[][] listNamespaces() {
    JsonNode r = call(Op.LIST_NAMESPACES, payload());
    List<String[]> out = new ArrayList<>();
    for (JsonNode t : r.path(Key.NAMESPACES)) {
      out.add(new String[] {t.asText()});
    }
    return out.toArray(new String[0][]);
  }

  public boolean namespaceExists(String[] namespace) {
    if (namespace.length != 1) {
      return false;
    }
    return call(Op.NAMESPACE_EXISTS, payload(namespace)).path(Key.EXISTS).asBoolean(false);
  }

  public void createNamespace(String[] namespace) {
    call(Op.CREATE_NAMESPACE, payload(namespace));
  }

  public boolean dropNamespace(String[] namespace, boolean cascade) {
    ObjectNode p = payload(namespace);
    p.put(Key.CASCADE, cascade);
    return call(Op.DROP_NAMESPACE, p).path(Key.DROPPED).asBoolean(false);
  }

  // -- procedures ------------------------------------------------------------------------

  public UnboundProcedure loadProcedure(Identifier ident) {
    if (LakeExplain.NAME.equals(String.join(".", ident.namespace()) + "." + ident.name())) {
      return new LakeExplain(this);
    }
    ObjectNode p = payload();
    p.put(Key.PROCEDURE, String.join(".", ident.namespace()) + "." + ident.name());
    JsonNode r = call(Op.PROCEDURE_INFO, p);
    return new LakeProcedure(this, r);
  }

  public Identifier[] listProcedures() {
    JsonNode r = call(Op.LIST_PROCEDURES, payload());
    List<Identifier> out = new ArrayList<>();
    for (JsonNode t : r.path(Key.PROCEDURES)) {
      out.add(Identifier.of(new String[] {"sys"}, t.asText()));
    }
    return out.toArray(new Identifier[0]);
  }
}
