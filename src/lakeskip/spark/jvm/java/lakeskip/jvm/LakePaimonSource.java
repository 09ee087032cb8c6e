package lakeskip.jvm;

import java.util.Map;
import java.util.WeakHashMap;

/**
 * {@code USING paimon} where Paimon's own Spark source is not on the classpath: lakeskip
 * writes Paimon's table layout, so on a session whose {@code spark_catalog} is lakeskip's
 * ({@link LakeSessionCatalog}) such a table is created as a lakeskip table, as users coming
 * from Paimon type it. Spark resolves the provider name before the catalog sees the
 * statement (an unknown one fails with DATA_SOURCE_NOT_FOUND), hence this registration.
 *
 * <p>Where Paimon's {@code org.apache.paimon.spark.SparkSource} is present, this source
 * answers to another name, so that {@code paimon} stays Paimon's own (two sources of one name
 * would make every {@code USING paimon} fail) and the catalog leaves such tables to Spark.
 */
public final class LakePaimonSource extends LakeSource {
  static final String PAIMON = "paimon";
  private static final String PAIMON_SOURCE = "org.apache.paimon.spark.SparkSource";
  private static final Map<ClassLoader, Boolean> PAIMON_PRESENT = new WeakHashMap<>();

  @Override
  public String shortName() {
    return paimonAbsent() ? PAIMON : "lakeskip-paimon-alias";
  }

  @Override
  String outsideCatalog() {
    return "USING paimon: Paimon's Spark source is not on the classpath; lakeskip makes Paimon"
        + " tables in a lakeskip catalog only (lakeskip.db.t, or lakeskip as spark_catalog)";
  }

  /** True when {@code USING paimon} means a lakeskip table: Paimon's own source is absent. */
  static boolean paimonAbsent() {
    ClassLoader loader = Thread.currentThread().getContextClassLoader();
    if (loader == null) {
      loader = LakePaimonSource.class.getClassLoader();
    }
    synchronized (PAIMON_PRESENT) {
      Boolean present = PAIMON_PRESENT.get(loader);
      if (present == null) {
        try {
          Class.forName(PAIMON_SOURCE, false, loader);
          present = true;
        } catch (ClassNotFoundException | LinkageError e) {
          present = false;
        }
        PAIMON_PRESENT.put(loader, present);
      }
      return !present;
    }
  }
}
