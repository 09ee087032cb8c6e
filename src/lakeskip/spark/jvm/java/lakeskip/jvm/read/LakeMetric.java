package lakeskip.jvm.read;

import org.apache.spark.sql.connector.metric.CustomSumMetric;

/**
 * One pruning figure of a lakeskip scan as a Spark SQL metric ({@link LakePruning}): the
 * scan node of the Spark UI's SQL tab, {@code SQLMetrics} of the executed plan and the SQL
 * listener show it. Spark aggregates V2 metrics by instantiating the metric's class with no
 * arguments (so this is a public top-level class); the name and description of each instance
 * are the figure's, the sum is {@link CustomSumMetric}'s.
 */
public class LakeMetric extends CustomSumMetric {
  private final String name;
  private final String description;

  /** The instance Spark builds to aggregate values: sums them. */
  public LakeMetric() {
    this("lakeskip", "lakeskip");
  }

  LakeMetric(String name, String description) {
    this.name = name;
    this.description = description;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String description() {
    return description;
  }
}
