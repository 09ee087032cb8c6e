package lakeskip.jvm.read;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.execution.python.UserDefinedPythonFunction;

/**
 * {@code df.mapInArrow(udf)} over every column of {@code df}, for Python's Arrow tasks
 * (lakeskip.spark.read.arrow_map: writes, sampling, routing, merges). PySpark builds the
 * UDF's call column by column ({@code df[name]}, then a Scala {@code Seq} filled element by
 * element: py4j round trips a column) and parses each name (a dot or a backquote in it is
 * read as something else); here the columns are taken by their quoted names in one call,
 * whatever their number.
 */
public final class ArrowMap {
  private ArrowMap() {}

  public static Dataset<Row> mapInArrow(Dataset<Row> df, UserDefinedPythonFunction udf) {
    List<Column> columns = new ArrayList<>();
    for (String name : df.columns()) {
      columns.add(df.col("`" + name.replace("`", "``") + "`"));
    }
    Column task = udf.apply(scala.jdk.javaapi.CollectionConverters.asScala(columns).toList());
    return df.mapInArrow(task, false, null);
  }
}
