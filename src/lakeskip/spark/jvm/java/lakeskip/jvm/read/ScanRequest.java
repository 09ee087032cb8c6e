package lakeskip.jvm.read;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.TreeSet;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.bridge.Protocol.Op;
import lakeskip.jvm.catalog.LakeTable;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The questions a scan puts to Python: which files to read ({@code plan_scan}), and the
 * payload every scan-time question starts from (the table, its pinned snapshot, the filters
 * and the session's settings; {@code aggregate_scan} adds its aggregates).
 */
public final class ScanRequest {
  private ScanRequest() {}

  /** The table, its pinned snapshot, the filters (as JSON) and the session's settings. */
  public static ObjectNode payload(
      LakeTable table, scala.collection.immutable.Seq<Expression> filters) {
    ObjectNode p = table.ops.payload(table.ident);
    if (table.snapshotId != null) {
      p.put(Key.SNAPSHOT_ID, table.snapshotId);
    }
    p.set(Key.FILTERS, PredicateJson.catalyst(filters));
    p.set(Key.SESSION, Bridge.session());
    return p;
  }

  /**
   * Python's plan of a scan: the kept files (with DVs), the pruning report, the token;
   * {@code pushed}: a pushed LIMIT / top-N's keys ({@code limit}, {@code order}), or empty.
   */
  public static JsonNode plan(
      LakeTable table, scala.collection.immutable.Seq<Expression> filters, ObjectNode pushed) {
    ObjectNode p = payload(table, filters);
    p.setAll(pushed);
    filterColumns(p, filters);
    return Bridge.ask(Op.PLAN_SCAN, p, null);
  }

  /** The columns Spark may push filters on: Python checks only these for unpushable ones. */
  public static void filterColumns(
      ObjectNode p, scala.collection.immutable.Seq<Expression> filters) {
    TreeSet<String> columns = new TreeSet<>();
    for (Expression e : CollectionConverters.asJava(filters)) {
      for (Attribute a : CollectionConverters.asJava(e.references().toSeq())) {
        columns.add(a.name());
      }
    }
    ArrayNode names = p.putArray(Key.FILTER_COLUMNS);
    columns.forEach(names::add);
  }
}
