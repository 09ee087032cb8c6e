package lakeskip.jvm.read;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.PredicateOp;
import lakeskip.jvm.bridge.Protocol.Op;
import lakeskip.jvm.cache.Lru;
import lakeskip.jvm.read.pk.LakePkScan;
import lakeskip.jvm.read.rules.LakeJoinKeys;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.expressions.FieldReference$;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.execution.datasources.FilePartition;
import org.apache.spark.sql.execution.datasources.FilePartition$;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.types.StructType;

/**
 * Spark's runtime filters (dynamic pruning through a join) for a {@link LakeScan}: which
 * columns they may name, and which of the scan's planned files they keep.
 *
 * <p>Spark's {@code PartitionPruning} rule inserts a dynamic pruning filter against a scan that
 * implements {@code SupportsRuntimeV2Filtering} when the join key is one of its
 * {@link #attributes filter attributes}; {@code BatchScanExec} hands the build side's keys as
 * {@code IN} predicates to {@code filter} before it asks for the input partitions. Other
 * formats declare their partition keys only; lakeskip declares the columns that can narrow the
 * scan's files (Python's {@code prunable} list: partition and bucket keys, indexed columns, and
 * columns the files are clustered by; nothing for a one-file scan), so a fact table clustered by
 * its date key skips files through a join to {@code date_dim}. Not every column: each declared
 * one lets Spark plan a subquery copying the join's other side, and TPC-DS q64's joins never
 * finished planning when every column of every scan was declared. Python decides ({@code runtime_filter}: the same tiers as the plan, only
 * over its kept files); Java only drops the files Python did not keep from the planned splits.
 *
 * <p>A column only a file index narrows whose runtime filter came longer than the index
 * answers is dropped unasked, and the scan no longer declares it ({@link #attributes}); nor
 * one it ran without any runtime filter on ({@link #unused}).
 *
 * <p>Spark conf {@value #ENABLED} (default true) turns it off: no filter attributes, so Spark
 * plans no runtime filter against lakeskip scans.
 *
 * <p>Python's answer is kept with this object, which a scan reused by a repetition of its
 * query shares ({@link lakeskip.jvm.cache.ScanCache}: same snapshot token, filters, session
 * settings): the same runtime filters again are answered here, without a callback. Why: a
 * join's keys are often tens of thousands of values, and asking Python again cost a repeated
 * TPC-H q8 / q21 1.4-3.9 s per run at SF 0.1 through {@code spark-sql} (loaded machine), where
 * the answer cannot have changed (it is a function of the pinned snapshot, the scan's
 * payload and the filters, all fixed here). A tagged query (its pruning report collected)
 * still asks, so that its report holds the runtime tier.
 */
final class LakeRuntimeFilter {
  /** Spark conf: declare runtime filter attributes (default true). */
  static final String ENABLED = "spark.lakeskip.runtime-filter.enabled";

  /** The scan's {@code plan_scan} payload (table, filters, session). */
  private final ObjectNode payload;
  /** The columns Python can prune on. */
  private final List<String> prunable = new ArrayList<>();
  /**
   * Of those, the columns only a file index narrows, each with the longest IN list Python
   * answers by index: a longer one it answers by stats alone, which keep every file.
   */
  private final Map<String, Integer> indexValues = new HashMap<>();
  /** The snapshot the plan is of (null: an empty table). */
  private final Long snapshot;
  /** Python's answers by the SHA-256 of the runtime filters' JSON (see the class comment). */
  private final Lru<String, Kept> answered = new Lru<>(4);
  /**
   * Columns only an index narrows whose runtime filter came beyond the index's bound in an
   * earlier run of this scan ({@link #beyondIndex}): not offered to Spark again (see {@link
   * #attributes}).
   */
  private final Set<String> beyond = java.util.concurrent.ConcurrentHashMap.newKeySet();
  /** The SQL executions that last handed a sharing scan runtime filters / ran one without. */
  private String filteredIn;
  private String unusedIn;
  /** The columns {@link #unused} added to {@link #beyond} in execution {@link #unusedIn}. */
  private final Set<String> addedUnused = new HashSet<>();

  /**
   * @param withheld columns not to offer although Python could prune on them (a join's
   *     smaller side, {@link LakeJoinKeys})
   */
  LakeRuntimeFilter(ObjectNode payload, JsonNode plan, Set<String> withheld) {
    this.payload = payload;
    for (JsonNode n : plan.path(Key.PRUNABLE)) {
      if (!withheld.contains(n.asText())) {
        prunable.add(n.asText());
      }
    }
    plan.path(Key.INDEX_VALUES).fields().forEachRemaining(
        e -> indexValues.put(e.getKey(), e.getValue().asInt()));
    JsonNode snap = plan.path(Key.PRUNING).path(Key.SNAPSHOT);
    this.snapshot = snap.isNumber() ? snap.asLong() : null;
  }

  /**
   * The prunable columns among those the scan reads (Spark resolves them against them),
   * without those whose runtime filter this scan already dropped as longer than the column's
   * index answers. Why: each declared column that a join's key names makes Spark plan a
   * dynamic pruning subquery, and where it reuses a broadcast, collect the broadcast's keys
   * on the driver and hand them over as one {@code IN} list, before the scan's tasks start;
   * plain Spark's scan pays none of that. TPC-H q8's {@code lineitem} got 450,000
   * {@code l_orderkey} values from {@code orders} this way on every run, which {@link #apply}
   * then drops. The scan is the one a repetition of the query reuses ({@link
   * lakeskip.jvm.cache.ScanCache}: same snapshot, filters and columns), so the repetition
   * plans no subquery for that column: a per-snapshot, per-scan memory of what the index
   * could not answer. The price: another query over the same scan shape, joined to a more
   * selective side, gets no runtime filter on that column either (never another answer,
   * only files read that the index might have skipped).
   */
  NamedReference[] attributes(StructType readSchema) {
    SparkSession session = SparkSession.active();
    if (snapshot == null
        || !Boolean.parseBoolean(session.conf().get(ENABLED, "true").trim())) {
      return new NamedReference[0];
    }
    Set<String> read = new HashSet<>(java.util.Arrays.asList(readSchema.fieldNames()));
    List<NamedReference> out = new ArrayList<>();
    for (String c : prunable) {
      if (read.contains(c) && !beyond.contains(c)) {
        out.add(FieldReference$.MODULE$.column(c));
      }
    }
    return out.toArray(new NamedReference[0]);
  }

  /**
   * The scan ran without any runtime filter although it declared the columns only an index
   * narrows: Spark planned none on them, or planned one and dropped it at run time (dynamic
   * pruning from the join's probe side, which AQE turns into {@code true} where it cannot
   * reuse a broadcast: TPC-H q8's {@code orders.o_orderkey} through {@code spark-sql}). A
   * repetition of the query, which reuses this scan, would plan that subquery again for
   * nothing; so those columns join {@link #beyond} and are not declared again. Same price as
   * {@link #beyond}: another query of this scan's shape joined to a selective side gets no
   * runtime filter on them (files read, never another answer).
   */
  void unused() {
    String execution = execution();
    synchronized (this) {
      if (execution != null && execution.equals(filteredIn)) {
        return;
      }
      unusedIn = execution;
      for (String c : indexValues.keySet()) {
        if (beyond.add(c)) {
          addedUnused.add(c);
        }
      }
    }
  }

  /**
   * A scan sharing this object was handed runtime filters ({@code LakeScan.filter}). Every
   * scan of one shape shares it ({@link lakeskip.jvm.cache.ScanCache}), so a query reading a
   * CTE twice, one reference joined and one not, runs one scan with and one without: what
   * {@link #unused} concluded from the one without in this execution is taken back (before:
   * the joined reference lost its runtime filter on every repetition; files read that the
   * index would have skipped, never another answer).
   */
  void filtered() {
    String execution = execution();
    synchronized (this) {
      filteredIn = execution;
      if (execution != null && execution.equals(unusedIn)) {
        beyond.removeAll(addedUnused);
        addedUnused.clear();
      }
    }
  }

  /** The SQL execution the calling thread runs (Spark's local property; null: none). */
  private static String execution() {
    return SparkSession.active().sparkContext().getLocalProperty("spark.sql.execution.id");
  }

  /** What Python kept: the files' names and the scan's new figures. */
  static final class Kept {
    final Set<String> names;
    final LakePruning pruning;

    Kept(Set<String> names, LakePruning pruning) {
      this.names = names;
      this.pruning = pruning;
    }
  }

  /**
   * Python's answer to {@code predicates} over the planned files (null: nothing to ask).
   * An IN list longer than Python answers by index, on a column only an index narrows, is
   * not sent (it would keep every file, and a join's keys can number hundreds of thousands:
   * their JSON, its transfer and translation cost more than the query's scan).
   */
  Kept apply(Predicate[] predicates) {
    if (snapshot == null) {
      return null;
    }
    List<Predicate> asked = new ArrayList<>();
    for (Predicate pred : predicates) {
      String column = beyondIndex(pred);
      if (column == null) {
        asked.add(pred);
      } else {
        beyond.add(column);
      }
    }
    if (asked.isEmpty()) {
      return null;
    }
    ArrayNode runtime = PredicateJson.predicates(asked.toArray(new Predicate[0]));
    boolean untagged = Bridge.tag().isEmpty();
    String key = untagged ? digest(runtime.toString()) : null;
    if (key != null) {
      Kept hit = answered.get(key);
      if (hit != null) {
        return hit;
      }
    }
    ObjectNode p = payload.deepCopy();
    p.put(Key.SNAPSHOT_ID, snapshot);  // the plan's snapshot, even if the table moved since
    p.set(Key.RUNTIME, runtime);
    JsonNode reply = Bridge.ask(Op.RUNTIME_FILTER, p, null);
    Set<String> names = new HashSet<>();
    for (JsonNode f : reply.path(Key.FILES)) {
      names.add(name(f.asText()));
    }
    Kept kept =
        new Kept(Collections.unmodifiableSet(names), LakePruning.of(reply.get(Key.PRUNING)));
    if (key != null) {
      answered.put(key, kept);
    }
    return kept;
  }

  /** The SHA-256 of {@code text} (the key of a kept answer: the JSON may be megabytes). */
  private static String digest(String text) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
          .digest(text.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The column of {@code column IN (...)} with more values than Python answers by the
   * column's index, else null.
   */
  private String beyondIndex(Predicate p) {
    if (!PredicateOp.IN.equals(p.name()) || p.children().length == 0
        || !(p.children()[0] instanceof NamedReference)) {
      return null;
    }
    String[] names = ((NamedReference) p.children()[0]).fieldNames();
    Integer limit = names.length == 1 ? indexValues.get(names[0]) : null;
    return limit != null && p.children().length - 1 > limit ? names[0] : null;
  }

  /**
   * The planned splits without the files Python did not keep: a file split loses files, a
   * merge-on-read bucket ({@link LakePkScan}) too, and a split left with none is dropped;
   * null when a split is neither (then nothing is narrowed: every planned file is read).
   *
   * <p>File splits of a scan planned as more than one split are then packed again as Spark
   * packs a scan of just the kept files ({@link #repack}). Why: the planned splits were
   * packed over every planned file, so the files a runtime filter keeps may sit in fewer
   * splits than Spark makes of them, and the scan's stage then runs fewer tasks than plain
   * Spark over the same files (the test: two kept files of one planned split read in one
   * task). At TPC-DS SF 0.1 the kept fact files of q4, q11, q26, q66, q67 and q69 already
   * spanned as many splits as after this (Spark packs largest first, which scatters
   * date-clustered files), so no gain is measured there. A scan planned as one split stays
   * one: Spark took it as a single partition ({@code BatchScanExec.outputPartitioning}) and
   * may have planned no shuffle after it.
   */
  static InputPartition[] narrow(InputPartition[] planned, Set<String> keep,
      SparkSession session) {
    List<InputPartition> out = new ArrayList<>();
    List<PartitionedFile> kept = new ArrayList<>();
    boolean files = true;
    for (InputPartition ip : planned) {
      files &= ip instanceof FilePartition;
      PartitionedFile[] all = ip instanceof FilePartition
          ? ((FilePartition) ip).files()
          : LakePkScan.bucketFiles(ip);
      if (all == null) {
        return null;
      }
      List<PartitionedFile> left = new ArrayList<>();
      for (PartitionedFile f : all) {
        if (keep.contains(name(f.filePath().toString()))) {
          left.add(f);
        }
      }
      if (left.isEmpty()) {
        continue;
      }
      kept.addAll(left);
      PartitionedFile[] split = left.toArray(new PartitionedFile[0]);
      out.add(ip instanceof FilePartition
          ? new FilePartition(out.size(), split)
          : LakePkScan.bucket(split));
    }
    if (files && planned.length > 1 && session != null && !kept.isEmpty()) {
      return repack(session, kept);
    }
    return out.toArray(new InputPartition[0]);
  }

  /**
   * {@code splits} packed into partitions as Spark's {@code FileScan.partitions} packs a scan
   * of exactly these splits: largest first, up to {@code FilePartition.maxSplitBytes} of
   * their bytes (each with the open cost) per partition.
   */
  static InputPartition[] repack(
      SparkSession session, List<PartitionedFile> splits) {
    List<PartitionedFile> sorted = new ArrayList<>(splits);
    sorted.sort(java.util.Comparator.comparingLong(PartitionedFile::length).reversed());
    long open = session.sessionState().conf().filesOpenCostInBytes();
    long total = 0;
    for (PartitionedFile f : sorted) {
      total += f.length() + open;
    }
    long bytes = total;
    long max = FilePartition$.MODULE$.maxSplitBytes(session, (scala.Function0<Object>) () -> bytes);
    return scala.jdk.javaapi.CollectionConverters.asJava(FilePartition$.MODULE$
        .getFilePartitions(session,
            scala.jdk.javaapi.CollectionConverters.asScala(sorted).toList(), max))
        .toArray(new InputPartition[0]);
  }

  private static String name(String path) {
    return path.substring(path.lastIndexOf('/') + 1);
  }
}
