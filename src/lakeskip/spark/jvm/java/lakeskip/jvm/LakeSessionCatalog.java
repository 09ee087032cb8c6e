package lakeskip.jvm;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.catalog.LakeOps;
import lakeskip.jvm.catalog.LakeTable;
import lakeskip.jvm.catalog.TableCache;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.DelegatingCatalogExtension;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalogCapability;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * lakeskip as {@code spark_catalog}: lakeskip tables resolve by unqualified name and
 * everything else (parquet, Hive tables, views) goes to Spark's own session catalog.
 * A table is created as a lakeskip table when it says {@code USING lakeskip}, or
 * {@code USING paimon} while Paimon's own Spark source is absent ({@link LakePaimonSource}).
 * (Uses the public DelegatingCatalogExtension, as delta-spark's DeltaCatalog does.)
 */
public class LakeSessionCatalog extends DelegatingCatalogExtension implements ProcedureCatalog {
  private LakeOps ops;

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    super.initialize(name, options);
    this.ops = new LakeOps(name, options);
  }

  private static boolean isLakeProvider(Map<String, String> properties) {
    String provider = properties.get(TableCatalog_PROP_PROVIDER);
    return provider != null
        && (provider.equalsIgnoreCase(LakeSource.SHORT_NAME)
            || provider.equalsIgnoreCase(LakePaimonSource.PAIMON)
                && LakePaimonSource.paimonAbsent());
  }

  private static final String TableCatalog_PROP_PROVIDER =
      org.apache.spark.sql.connector.catalog.TableCatalog.PROP_PROVIDER;

  @Override
  public Table loadTable(Identifier ident) throws NoSuchTableException {
    // a lakeskip table this catalog loaded and that is provably unchanged: no callback at all
    LakeTable cached = TableCache.get(ops, ident);
    if (cached != null) {
      return cached;
    }
    if (ops.isLakeTable(ident)) {
      return ops.loadTable(ident, null, null);
    }
    return super.loadTable(ident);
  }

  @Override
  public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
    if (ops.isLakeTable(ident)) {
      return ops.loadTable(ident, version, null);
    }
    return super.loadTable(ident, version);
  }

  @Override
  public Table loadTable(Identifier ident, long timestamp) throws NoSuchTableException {
    if (ops.isLakeTable(ident)) {
      return ops.loadTable(ident, null, timestamp);
    }
    return super.loadTable(ident, timestamp);
  }

  @Override
  public boolean tableExists(Identifier ident) {
    return ops.isLakeTable(ident) || super.tableExists(ident);
  }

  @Override
  public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
    Identifier[] theirs = super.listTables(namespace);
    Identifier[] ours;
    try {
      ours = ops.listTables(namespace);
    } catch (NoSuchNamespaceException e) {
      return theirs;
    }
    Identifier[] out = new Identifier[theirs.length + ours.length];
    System.arraycopy(theirs, 0, out, 0, theirs.length);
    System.arraycopy(ours, 0, out, theirs.length, ours.length);
    return out;
  }

  @Override
  public Table createTable(
      Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    if (isLakeProvider(properties)) {
      ensureWarehouseNamespace(ident);
      return ops.createTable(
          ident, LakeOps.lakeColumns(ident, columns), partitions, properties);
    }
    return super.createTable(ident, columns, partitions, properties);
  }

  /**
   * PRIMARY KEY constraints reach {@link #createTable(Identifier, TableInfo)} (lakeskip tables
   * make them Paimon's primary key); Spark's own tables get them only if Spark's catalog takes
   * constraints, else that method refuses them.
   */
  @Override
  public Set<TableCatalogCapability> capabilities() {
    Set<TableCatalogCapability> out = EnumSet.noneOf(TableCatalogCapability.class);
    out.addAll(super.capabilities());
    out.add(TableCatalogCapability.SUPPORT_TABLE_CONSTRAINT);
    return out;
  }

  @Override
  public Table createTable(Identifier ident, TableInfo info)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    if (isLakeProvider(info.properties())) {
      ensureWarehouseNamespace(ident);
      return ops.createTable(
          ident, LakeOps.lakeColumns(ident, info.columns()), info.partitions(),
          LakeOps.withPrimaryKey(info.properties(), info.constraints()));
    }
    if (info.constraints() != null && info.constraints().length > 0
        && !super.capabilities().contains(TableCatalogCapability.SUPPORT_TABLE_CONSTRAINT)) {
      throw Bridge.error(
          "CREATE TABLE " + ident + ": table constraints are kept only by lakeskip tables "
              + "(USING lakeskip), not by " + info.properties().get(TableCatalog_PROP_PROVIDER)
              + " tables",
          null);
    }
    return super.createTable(ident, info);
  }

  @Override
  @SuppressWarnings("deprecation")
  public Table createTable(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    if (isLakeProvider(properties)) {
      ensureWarehouseNamespace(ident);
      return ops.createTable(ident, schema, partitions, properties);
    }
    return super.createTable(ident, schema, partitions, properties);
  }

  /**
   * {@code CREATE TABLE t LIKE s} where s is a lakeskip table: t is a lakeskip table with s's
   * columns, keys and options (as {@link LakeCatalog#createTableLike}), unless the statement
   * names another provider; any other source is Spark's own.
   */
  @Override
  public Table createTableLike(Identifier ident, TableInfo info, Table source)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    String provider = info.properties().get(TableCatalog_PROP_PROVIDER);
    if (source instanceof LakeTable && (provider == null || isLakeProvider(info.properties()))) {
      ensureWarehouseNamespace(ident);
      java.util.Map<String, String> props = new java.util.HashMap<>(info.properties());
      props.remove(TableCatalog_PROP_PROVIDER);
      return ops.createTableLike(ident, props, source);
    }
    return super.createTableLike(ident, info, source);
  }

  /** Databases live in Spark's session catalog here; the warehouse follows on first use. */
  private void ensureWarehouseNamespace(Identifier ident) {
    if (ident.namespace().length == 1 && !ops.namespaceExists(ident.namespace())) {
      ops.createNamespace(ident.namespace());
    }
  }

  @Override
  public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
    if (ops.isLakeTable(ident)) {
      return ops.alterTable(ident, changes);
    }
    return super.alterTable(ident, changes);
  }

  @Override
  public boolean dropTable(Identifier ident) {
    if (ops.isLakeTable(ident)) {
      return ops.dropTable(ident);
    }
    return super.dropTable(ident);
  }

  @Override
  public boolean purgeTable(Identifier ident) {
    if (ops.isLakeTable(ident)) {
      return ops.dropTable(ident);
    }
    return super.purgeTable(ident);
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
