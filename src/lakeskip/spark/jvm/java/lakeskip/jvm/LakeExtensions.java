package lakeskip.jvm;

import lakeskip.jvm.read.rules.LakeJoinKeys;
import lakeskip.jvm.read.rules.LakeTopN;
import lakeskip.jvm.read.rules.LakeTruncRanges;
import lakeskip.jvm.read.rules.PreCboRules;
import lakeskip.jvm.read.stream.LakeStreamFilters;
import lakeskip.jvm.sql.LakeParser;
import lakeskip.jvm.write.LakeDmlStrategy;
import lakeskip.jvm.write.LakeMergeSchema;
import org.apache.spark.sql.SparkSessionExtensions;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions = lakeskip.jvm.LakeExtensions}: plain {@code spark.sql} also
 * accepts Paimon's {@code CREATE TABLE ... WITH (...)} and {@code CALL sys.x(...)} without a
 * catalog prefix (see {@link LakeParser}); DELETE / UPDATE / MERGE INTO on lakeskip tables
 * are planned by {@link LakeDmlStrategy}; filters over a streaming read of a lakeskip table
 * prune its micro-batches' files ({@link LakeStreamFilters}); {@code ORDER BY c LIMIT k} over a
 * filter reaches the scan ({@link LakeTopN}); {@code date_trunc(unit, ts) = T} and its kin
 * add a range of {@code ts} beside them ({@link LakeTruncRanges}); a join key that needs a
 * widening cast still carries a runtime filter to a lakeskip scan ({@link LakeJoinKeys}); a
 * DataFrame write with {@code mergeSchema} adds its new columns to the table
 * ({@link LakeMergeSchema}).
 */
public class LakeExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectParser((session, parser) -> new LakeParser(session, parser));
    extensions.injectPlannerStrategy(session -> new LakeDmlStrategy());
    extensions.injectOptimizerRule(session -> new LakeStreamFilters());
    PreCboRules.inject(extensions);
    extensions.injectHintResolutionRule(session -> new LakeMergeSchema());
    return BoxedUnit.UNIT;
  }
}
