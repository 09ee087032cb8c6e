package lakeskip.jvm;

import java.util.Map;
import lakeskip.jvm.bridge.Bridge;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code USING lakeskip}: registers the provider name so that {@code CREATE TABLE ... USING
 * lakeskip} reaches {@link LakeSessionCatalog#createTable}. Tables are read through a lakeskip
 * catalog, never by path.
 */
public class LakeSource implements TableProvider, DataSourceRegister {
  public static final String SHORT_NAME = "lakeskip";

  @Override
  public String shortName() {
    return SHORT_NAME;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    throw Bridge.error(outsideCatalog(), null);
  }

  @Override
  public Table getTable(
      StructType schema, Transform[] partitioning, Map<String, String> properties) {
    throw Bridge.error(outsideCatalog(), null);
  }

  /** Why a table of this provider cannot be had here (by path, or in another catalog). */
  String outsideCatalog() {
    return "lakeskip tables are read through a lakeskip catalog (spark.table('lakeskip.db.t')),"
        + " not by path";
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }
}
