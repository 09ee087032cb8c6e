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
    return out;
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
