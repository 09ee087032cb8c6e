package lakeskip.jvm;

import java.util.Map;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.StageMode;
import lakeskip.jvm.catalog.LakeOps;
import lakeskip.jvm.catalog.LakeStagedTable;
import lakeskip.jvm.catalog.LakeTable;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableCatalogCapability;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.sql.catalog.lakeskip = lakeskip.jvm.LakeCatalog} with
 * {@code spark.sql.catalog.lakeskip.warehouse = <path>}: every database of the warehouse is a
 * namespace, every table a {@link LakeTable}, {@code CALL lakeskip.sys.x(...)} a procedure.
 * CREATE / REPLACE TABLE ... AS SELECT are atomic ({@link StagingTableCatalog}, see
 * {@link LakeStagedTable}).
 */
public class LakeCatalog
    implements StagingTableCatalog, SupportsNamespaces, ProcedureCatalog {
  private LakeOps ops;
  private String name;

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
    this.ops = new LakeOps(name, options);
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String[] defaultNamespace() {
    return new String[] {"default"};
  }

  @Override
  public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
    return ops.listTables(namespace);
  }

  @Override
  public Table loadTable(Identifier ident) throws NoSuchTableException {
    return ops.loadTable(ident, null, null);
  }

  @Override
  public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
    return ops.loadTable(ident, version, null);
  }

  @Override
  public Table loadTable(Identifier ident, long timestamp) throws NoSuchTableException {
    return ops.loadTable(ident, null, timestamp);
  }

  @Override
  public boolean tableExists(Identifier ident) {
    return ops.isLakeTable(ident);
  }

  /** PRIMARY KEY constraints in CREATE TABLE reach {@link #createTable(Identifier, TableInfo)}. */
  @Override
  public java.util.Set<TableCatalogCapability> capabilities() {
    return java.util.EnumSet.of(TableCatalogCapability.SUPPORT_TABLE_CONSTRAINT);
  }

  /** Spark 4.x passes table constraints here: a PRIMARY KEY becomes a primary-key table. */
  @Override
  public Table createTable(Identifier ident, TableInfo info)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    return ops.createTable(
        ident, LakeOps.lakeColumns(ident, info.columns()), info.partitions(),
        propertiesOf(info));
  }

  @Override
  @SuppressWarnings("deprecation")
  public Table createTable(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    return ops.createTable(ident, schema, partitions, properties);
  }

  // -- CTAS / RTAS: staged, published on commit ------------------------------------------
  // Spark's TableInfo and Column[] forms default to these; ops.stageTable throws the Spark
  // exceptions of the mode, which each declares.

  @Override
  @SuppressWarnings("deprecation")
  public StagedTable stageCreate(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    return ops.stageTable(ident, schema, partitions, properties, StageMode.CREATE);
  }

  @Override
  @SuppressWarnings("deprecation")
  public StagedTable stageReplace(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
      throws NoSuchNamespaceException, NoSuchTableException {
    return ops.stageTable(ident, schema, partitions, properties, StageMode.REPLACE);
  }

  @Override
  @SuppressWarnings("deprecation")
  public StagedTable stageCreateOrReplace(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
      throws NoSuchNamespaceException {
    return ops.stageTable(ident, schema, partitions, properties, StageMode.CREATE_OR_REPLACE);
  }

  // Spark 4.x stages CREATE / REPLACE TABLE through these (REPLACE TABLE without AS SELECT
  // too): the PRIMARY KEY constraint must reach Python here as in createTable(TableInfo)

  @Override
  public StagedTable stageCreate(Identifier ident, TableInfo info)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    return stage(ident, info, StageMode.CREATE);
  }

  @Override
  public StagedTable stageReplace(Identifier ident, TableInfo info)
      throws NoSuchNamespaceException, NoSuchTableException {
    return stage(ident, info, StageMode.REPLACE);
  }

  @Override
  public StagedTable stageCreateOrReplace(Identifier ident, TableInfo info)
      throws NoSuchNamespaceException {
    return stage(ident, info, StageMode.CREATE_OR_REPLACE);
  }

  private StagedTable stage(Identifier ident, TableInfo info, String mode) {
    return ops.stageTable(
        ident, LakeOps.lakeColumns(ident, info.columns()), info.partitions(),
        propertiesOf(info), mode);
  }

  private static Map<String, String> propertiesOf(TableInfo info) {
    return LakeOps.withPrimaryKey(info.properties(), info.constraints());
  }

  @Override
  public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
    return ops.alterTable(ident, changes);
  }

  @Override
  public boolean dropTable(Identifier ident) {
    return ops.dropTable(ident);
  }

  @Override
  public boolean purgeTable(Identifier ident) {
    return ops.dropTable(ident);
  }

  @Override
  public void renameTable(Identifier oldIdent, Identifier newIdent) {
    throw Bridge.error("lakeskip tables cannot be renamed (Paimon filesystem catalog)", null);
  }

  @Override
  public String[][] listNamespaces() {
    return ops.listNamespaces();
  }

  @Override
  public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
    if (namespace.length == 0) {
      return ops.listNamespaces();
    }
    if (!ops.namespaceExists(namespace)) {
      throw Bridge.noSuchNamespace(namespace);
    }
    return new String[0][];
  }

  @Override
  public boolean namespaceExists(String[] namespace) {
    return ops.namespaceExists(namespace);
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(String[] namespace)
      throws NoSuchNamespaceException {
    if (!ops.namespaceExists(namespace)) {
      throw Bridge.noSuchNamespace(namespace);
    }
    return new java.util.HashMap<>();
  }

  @Override
  public void createNamespace(String[] namespace, Map<String, String> metadata) {
    ops.createNamespace(namespace);
  }

  @Override
  public void alterNamespace(String[] namespace, NamespaceChange... changes) {
    throw Bridge.error("lakeskip databases have no properties to alter", null);
  }

  @Override
  public boolean dropNamespace(String[] namespace, boolean cascade) {
    return ops.dropNamespace(namespace, cascade);
  }

  @Override
  public UnboundProcedure loadProcedure(Identifier ident) {
    return ops.loadProcedure(ident);
  }

  @Override
  public Identifier[] listProcedures(String[] namespace) {
    return ops.listProcedures();
  }
}
