package lakeskip.jvm.read;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.catalog.LakeTable;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression$;
import org.apache.spark.sql.catalyst.expressions.UnaryExpression;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Which of Spark's Catalyst filters go where: the filters Python prunes files by (all of
 * them, but an audit table's filters on {@code rowkind}), the filters that stay after the scan
 * (all of them, but those the file index answers exactly), and the filters Spark's Parquet
 * scan may use to skip row groups. Every filter Spark applies to the rows stays applied:
 * file pruning never replaces Spark's own filtering.
 */
public final class FilterPushDown {
  private FilterPushDown() {}

  /** No filter. */
  public static scala.collection.immutable.Seq<Expression> none() {
    return CollectionConverters.asScala(new ArrayList<Expression>()).toList();
  }

  /** The filters Python plans the scan with. */
  public static scala.collection.immutable.Seq<Expression> forFiles(
      LakeTable table, scala.collection.immutable.Seq<Expression> filters) {
    // filters on t$audit_log's rowkind stay Spark's alone (no file holds that column)
    return table.audit() ? LakeAuditScan.withoutRowkindFilters(filters) : filters;
  }

  /**
   * The filters Spark must still apply to the rows the scan returns. As Spark's own file
   * sources: a filter on partition columns only is answered exactly by the file index
   * ({@link LakeFileIndex}: Spark evaluates it on each partition's values, which are also the
   * values the rows get), so it is no post-scan filter; this is also what lets Spark push an
   * aggregate (it pushes none above a post-scan filter). An audit table and a merge-on-read
   * (primary-key) table keep every filter: the latter's filters apply after the merge.
   */
  public static scala.collection.immutable.Seq<Expression> postScan(
      LakeTable table, scala.collection.immutable.Seq<Expression> filters) {
    if (table.audit() || table.readByMerge()) {
      return filters;
    }
    Set<String> partitions = new HashSet<>(table.partitionKeys);
    List<Expression> post = new ArrayList<>();
    for (Expression e : CollectionConverters.asJava(filters)) {
      if (!partitionOnly(e, partitions)) {
        post.add(e);
      }
    }
    return CollectionConverters.asScala(post).toList();
  }

  /** Whether every filter is answered exactly by the file index ({@link #partitionOnly}). */
  public static boolean allPartitionOnly(
      LakeTable table, scala.collection.immutable.Seq<Expression> filters) {
    Set<String> partitions = new HashSet<>(table.partitionKeys);
    for (Expression e : CollectionConverters.asJava(filters)) {
      if (!partitionOnly(e, partitions)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Whether the file index answers {@code e} exactly: deterministic, no subquery, and every
   * column it reads a partition column (a subset of what Spark's {@code FileScanBuilder} takes
   * as partition filters, so Spark's Parquet scan prunes partitions by it).
   */
  static boolean partitionOnly(Expression e, Set<String> partitions) {
    if (partitions.isEmpty() || !e.deterministic()
        || SubqueryExpression$.MODULE$.hasSubquery(e)) {
      return false;
    }
    List<Attribute> refs = CollectionConverters.asJava(e.references().toSeq());
    if (refs.isEmpty()) {
      return false;
    }
    for (Attribute a : refs) {
      if (!partitions.contains(a.name())) {
        return false;
      }
    }
    return true;
  }

  /**
   * The filters Spark's Parquet scan may use to skip row groups and pages: all but those on a
   * column Python named {@code unpushable} (a FLOAT/DOUBLE column that may hold NaN in a file
   * whose Parquet min/max leave NaN out, issue 26; Spark orders NaN above +Infinity, so
   * {@code c = NaN} or {@code c > x} would skip its NaN rows). {@code IS [NOT] NULL} only
   * reads null counts and stays. Every filter is still applied to the rows by Spark.
   */
  public static scala.collection.immutable.Seq<Expression> parquet(
      scala.collection.immutable.Seq<Expression> filters, JsonNode reply) {
    return parquet(filters, reply, Collections.emptySet());
  }

  /**
   * As {@link #parquet(scala.collection.immutable.Seq, JsonNode)}, but a filter on the
   * {@code partitions} columns only is always kept: Spark evaluates it on the partition
   * values (no statistics), and it may be no post-scan filter ({@link #postScan}).
   */
  public static scala.collection.immutable.Seq<Expression> parquet(
      scala.collection.immutable.Seq<Expression> filters, JsonNode reply,
      Set<String> partitions) {
    Set<String> unsafe = new HashSet<>();
    for (JsonNode n : reply.path(Key.UNPUSHABLE)) {
      unsafe.add(n.asText().toLowerCase(Locale.ROOT));
    }
    if (unsafe.isEmpty()) {
      return filters;
    }
    List<Expression> out = new ArrayList<>();
    for (Expression e : CollectionConverters.asJava(filters)) {
      boolean nullTest = (e instanceof IsNull || e instanceof IsNotNull)
          && ((UnaryExpression) e).child() instanceof Attribute;
      boolean touches = false;
      for (Attribute a : CollectionConverters.asJava(e.references().toSeq())) {
        touches |= unsafe.contains(a.name().toLowerCase(Locale.ROOT));
      }
      if (nullTest || !touches || partitionOnly(e, partitions)) {
        out.add(e);
      }
    }
    return CollectionConverters.asScala(out).toList();
  }
}
