package lakeskip.jvm.read;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.cache.ScanCache;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/**
 * What the planner decided for one scan, as Spark shows it: a line of the scan's EXPLAIN
 * description ({@code files 1/32 kept; skipped by partition 8, stats 20, bloom-filter(cat) 3})
 * and driver-side custom metrics (files total, kept, skipped per tier and per index and column,
 * index files and bytes read, planning time), reported by the scan after Spark ran it.
 *
 * <p>A scan reused from {@link ScanCache} keeps its files, so its figures are the same; its
 * planning time is 0 (nothing was planned for that query) and EXPLAIN says the plan was
 * reused.
 */
final class LakePruning {
  /** name -> (description, value), in display order. */
  private final Map<String, Object[]> figures = new LinkedHashMap<>();
  private final String text;

  private LakePruning(Map<String, Object[]> figures, String text) {
    this.figures.putAll(figures);
    this.text = text;
  }

  /** From the {@code pruning} object of a {@code plan_scan} reply (null: none). */
  public static LakePruning of(JsonNode p) {
    if (p == null || p.isMissingNode() || p.isNull()) {
      return null;
    }
    Map<String, Object[]> f = new LinkedHashMap<>();
    put(f, "lakeskipFilesTotal", "lakeskip files total", p.path(Key.TOTAL).asLong());
    put(f, "lakeskipFilesKept", "lakeskip files kept", p.path(Key.KEPT).asLong());
    put(f, "lakeskipSkippedPartition", "lakeskip files skipped by partition",
        p.path(Key.PARTITION).asLong());
    put(f, "lakeskipSkippedBucket", "lakeskip files skipped by bucket", p.path(Key.BUCKET).asLong());
    put(f, "lakeskipSkippedStats", "lakeskip files skipped by stats", p.path(Key.STATS).asLong());
    List<String> reasons = new ArrayList<>();
    addReason(reasons, Key.PARTITION, p.path(Key.PARTITION).asLong());
    addReason(reasons, Key.BUCKET, p.path(Key.BUCKET).asLong());
    addReason(reasons, Key.STATS, p.path(Key.STATS).asLong());
    Iterator<Map.Entry<String, JsonNode>> it = p.path(Key.INDEX).fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      put(f, "lakeskipSkippedIndex_" + e.getKey(), "lakeskip files skipped by " + e.getKey(),
          e.getValue().asLong());
    }
    it = p.path(Key.COLUMN).fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      put(f, "lakeskipSkippedColumn_" + e.getKey(), "lakeskip files skipped by " + e.getKey(),
          e.getValue().asLong());
      addReason(reasons, e.getKey(), e.getValue().asLong());
    }
    // files skipped by runtime filters (dynamic pruning through a join), by tier and column
    long runtime = 0;
    it = p.path(Key.RUNTIME).fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      runtime += e.getValue().asLong();
      addReason(reasons, "runtime " + e.getKey(), e.getValue().asLong());
    }
    put(f, "lakeskipSkippedRuntime", "lakeskip files skipped at run time", runtime);
    // files a pushed LIMIT / ORDER BY ... LIMIT skipped ("limit", "top-n(ts)")
    long limit = 0;
    it = p.path(Key.LIMIT).fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      limit += e.getValue().asLong();
      addReason(reasons, e.getKey(), e.getValue().asLong());
    }
    if (limit > 0) {
      put(f, "lakeskipSkippedLimit", "lakeskip files skipped by LIMIT / top-N", limit);
    }
    long other = p.path(Key.OTHER).asLong();
    if (other > 0) {
      put(f, "lakeskipSkippedOther", "lakeskip files skipped by deletion vectors or level 0",
          other);
      addReason(reasons, "deletion vectors / level 0", other);
    }
    put(f, "lakeskipIndexFilesRead", "lakeskip index files read",
        p.path(Key.INDEX_FILES_READ).asLong());
    put(f, "lakeskipIndexBytesRead", "lakeskip index bytes read",
        p.path(Key.INDEX_BYTES_READ).asLong());
    double ms = p.path(Key.PLANNING_MS).asDouble();
    put(f, "lakeskipPlanningMs", "lakeskip planning time (ms)", Math.round(ms));
    StringBuilder text = new StringBuilder("files ")
        .append(p.path(Key.KEPT).asLong()).append('/').append(p.path(Key.TOTAL).asLong())
        .append(" kept");
    if (!reasons.isEmpty()) {
      text.append("; skipped by ").append(String.join(", ", reasons));
    }
    JsonNode snap = p.path(Key.SNAPSHOT);
    text.append(snap.isNumber() ? "; snapshot " + snap.asLong() : "; empty table");
    text.append(String.format(java.util.Locale.ROOT, "; planned in %.1f ms", ms));
    return new LakePruning(f, text.toString());
  }

  private static void put(Map<String, Object[]> f, String name, String description, long v) {
    f.put(name, new Object[] {description, v});
  }

  private static void addReason(List<String> reasons, String what, long n) {
    if (n > 0) {
      reasons.add(what + " " + n);
    }
  }

  /** The same figures for a query that reused this scan: nothing was planned for it. */
  LakePruning reused() {
    Map<String, Object[]> f = new LinkedHashMap<>(figures);
    f.put("lakeskipPlanningMs", new Object[] {figures.get("lakeskipPlanningMs")[0], 0L});
    String t = text.replaceAll("; planned in [0-9.]+ ms$", "; plan reused");
    return new LakePruning(f, t);
  }

  /** Whether the planner kept every file of the scan (nothing skipped by any tier). */
  boolean keptAll() {
    Object[] kept = figures.get("lakeskipFilesKept");
    Object[] total = figures.get("lakeskipFilesTotal");
    return kept != null && total != null && kept[1].equals(total[1]);
  }

  /** The EXPLAIN text. */
  String text() {
    return text;
  }

  CustomMetric[] metrics() {
    List<CustomMetric> out = new ArrayList<>();
    for (Map.Entry<String, Object[]> e : figures.entrySet()) {
      out.add(new LakeMetric(e.getKey(), (String) e.getValue()[0]));
    }
    return out.toArray(new CustomMetric[0]);
  }

  CustomTaskMetric[] values() {
    return valuesOf(this);
  }

  /**
   * These figures' values for the metrics {@code declared} declared (Spark creates a scan's
   * metrics before it runs; figures a runtime filter added, e.g. a column's, stay in the
   * EXPLAIN text).
   */
  CustomTaskMetric[] valuesOf(LakePruning declared) {
    List<CustomTaskMetric> out = new ArrayList<>();
    for (Map.Entry<String, Object[]> e : figures.entrySet()) {
      String name = e.getKey();
      if (declared != null && !declared.figures.containsKey(name)) {
        continue;
      }
      long v = (Long) e.getValue()[1];
      out.add(new CustomTaskMetric() {
        @Override
        public String name() {
          return name;
        }

        @Override
        public long value() {
          return v;
        }
      });
    }
    return out.toArray(new CustomTaskMetric[0]);
  }
}
