package lakeskip.jvm.read.rules;

import java.util.Collections;
import java.util.Set;
import org.apache.spark.sql.SparkSessionExtensions;

/**
 * lakeskip's pre-CBO rules, in order: {@link LakeTopN}, {@link LakeJoinKeys}, {@link
 * LakeTruncRanges}. {@code LakeExtensions} injects them through {@link #inject}; a session
 * started without it (a catalog attached at run time) gets them through {@link #install}.
 */
public final class PreCboRules {
  private static final Set<SparkSessionExtensions> INSTALLED =
      Collections.newSetFromMap(new java.util.WeakHashMap<>());

  private PreCboRules() {}

  /** Injects the rules into {@code ext}. */
  public static void inject(SparkSessionExtensions ext) {
    ext.injectPreCBORule(s -> new LakeTopN());
    ext.injectPreCBORule(s -> new LakeJoinKeys());
    ext.injectPreCBORule(s -> new LakeTruncRanges());
  }

  /**
   * The rules for a session started without {@code LakeExtensions}: Spark builds its pre-CBO
   * rules from the session's extensions at every optimization, so injecting them now takes
   * effect from the next query on. Once per session.
   */
  public static void install(org.apache.spark.sql.classic.SparkSession session) {
    SparkSessionExtensions ext = session.extensions();
    synchronized (INSTALLED) {
      if (INSTALLED.add(ext)) {
        inject(ext);
      }
    }
  }
}
