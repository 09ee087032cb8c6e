package lakeskip.jvm.cache;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;

/**
 * The scan cache's key rule without a session ({@link ScanCache#normalized} and
 * {@link SessionKey}, as {@link ScanCache#key} combines them): two queries asking the same
 * filters under other attribute ids and qualifiers share a key; another literal, or 0.0 against
 * -0.0 (equal to Scala's {@code ==}), does not.
 */
public final class CacheKeyCheck {
  private CacheKeyCheck() {}

  public static ObjectNode run(ObjectMapper json) {
    ObjectNode out = json.createObjectNode();
    out.put("same_filter_other_ids",
        key(eq("a", DataTypes.LongType, 1, "t", 5L))
            .equals(key(eq("a", DataTypes.LongType, 2, "u", 5L))));
    out.put("other_literal",
        key(eq("a", DataTypes.LongType, 1, "t", 5L))
            .equals(key(eq("a", DataTypes.LongType, 1, "t", 6L))));
    out.put("zero_and_negative_zero",
        key(eq("d", DataTypes.DoubleType, 1, "t", 0.0))
            .equals(key(eq("d", DataTypes.DoubleType, 1, "t", -0.0))));
    out.put("other_column",
        key(eq("a", DataTypes.LongType, 1, "t", 5L))
            .equals(key(eq("b", DataTypes.LongType, 1, "t", 5L))));
    settings(out);
    return out;
  }

  /**
   * {@link Settings}: the same live entries give the very same copy; a value changed in
   * place, an entry added or removed give an unequal one; back to the earlier entries, a copy
   * equal to the first; an output-only setting changes nothing.
   */
  private static void settings(ObjectNode out) {
    Settings s = new Settings();
    java.util.Properties live = new java.util.Properties();
    live.setProperty("fs.x", "1");
    live.setProperty("parquet.y", "2");
    Settings.Frozen first = s.of(live);
    out.put("settings_unchanged_same_copy", s.of(live) == first);
    live.setProperty("parquet.y", "3");
    Settings.Frozen changed = s.of(live);
    out.put("settings_changed_in_place", changed.equals(first));
    live.setProperty("parquet.y", "2");
    Settings.Frozen back = s.of(live);
    out.put("settings_back", back != changed && back.equals(first)
        && back.hashCode() == first.hashCode());
    live.setProperty("z", "");
    out.put("settings_added", s.of(live).equals(first));
    live.remove("z");
    live.remove("fs.x");
    out.put("settings_removed", s.of(live).equals(first));
    live.setProperty("fs.x", "1");
    live.setProperty(SessionKey.OUTPUT_ONLY.get(0), "HEX");
    out.put("settings_output_only", s.of(live).equals(first));
    madeWith(out);
  }

  /**
   * {@link Settings.Frozen#madeWith}: a scan's Hadoop settings are what Spark makes of the
   * SparkContext's, the SQL settings and the options (path aside) set over them in that
   * order, output-only ones aside; an entry more or missing, or a value not the one set last,
   * is not.
   */
  private static void madeWith(ObjectNode out) {
    java.util.Properties hadoop = new java.util.Properties();
    hadoop.setProperty("fs.x", "1");
    hadoop.setProperty("parquet.y", "2");
    hadoop.setProperty("parquet.z", "3");
    java.util.Map<String, String> sql = new java.util.HashMap<>();
    sql.put("spark.sql.a", "t");
    sql.put("parquet.y", "5");
    sql.put(SessionKey.OUTPUT_ONLY.get(0), "HEX");
    java.util.Map<String, String> options = new java.util.HashMap<>();
    options.put("parquet.z", "9");
    options.put("path", "/p");
    Settings.Frozen h = new Settings().of(hadoop);
    Settings.Frozen q = new Settings().of(sql);
    java.util.Properties made = new java.util.Properties();
    made.putAll(hadoop);
    made.putAll(sql);
    made.put("parquet.z", "9");
    out.put("made_with", h.madeWith(made, q, options));
    made.remove(SessionKey.OUTPUT_ONLY.get(0));
    out.put("made_with_output_only_aside", h.madeWith(made, q, options));
    made.setProperty("extra", "e");
    out.put("made_with_an_entry_more", h.madeWith(made, q, options));
    made.remove("extra");
    made.remove("spark.sql.a");
    out.put("made_with_an_entry_missing", h.madeWith(made, q, options));
    made.setProperty("spark.sql.a", "t");
    made.setProperty("parquet.y", "2");
    out.put("made_with_an_earlier_value", h.madeWith(made, q, options));
    made.setProperty("parquet.y", "5");
    made.setProperty("path", "/p");
    out.put("made_with_the_path", h.madeWith(made, q, options));
  }

  private static Expression eq(String column, DataType type, long id, String qualifier,
      Object value) {
    List<String> q = new ArrayList<>();
    q.add(qualifier);
    AttributeReference a = new AttributeReference(column, type, true, Metadata.empty(),
        ExprId.apply(id), scala.jdk.javaapi.CollectionConverters.asScala(q).toList());
    return new EqualTo(a, Literal.create(value, type));
  }

  /** What {@link ScanCache#key} makes of the filters, the session aside (null here). */
  private static SessionKey key(Expression filter) {
    List<Expression> one = new ArrayList<>();
    one.add(filter);
    List<Expression> normal =
        ScanCache.normalized(scala.jdk.javaapi.CollectionConverters.asScala(one).toList());
    return new SessionKey(null, normal, normal.toString());
  }
}
