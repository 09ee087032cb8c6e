package lakeskip.jvm.write;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.python.PythonFunction;
import org.apache.spark.api.python.SimplePythonFunction;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.execution.python.UserDefinedPythonFunction;
import org.apache.spark.sql.types.DataType;

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

  /** PySpark's {@code PythonEvalType.SQL_MAP_ARROW_ITER_UDF}. */
  private static final int SQL_MAP_ARROW_ITER_UDF = 207;

  /**
   * The same, the UDF built here from its pickled command ({@code (task, return type)}, as
   * PySpark pickles it) and a {@code PythonFunction} of the same Python context ({@code like}:
   * its environment, includes, Python, accumulator), without broadcast variables: one py4j
   * call where PySpark's UDF set-up takes ~20.
   */
  public static Dataset<Row> mapInArrow(Dataset<Row> df, String name, byte[] command,
      PythonFunction like, String returnTypeJson) {
    PythonFunction f = new SimplePythonFunction(command, like.envVars(), like.pythonIncludes(),
        like.pythonExec(), like.pythonVer(), new ArrayList<>(), like.accumulator());
    UserDefinedPythonFunction udf = new UserDefinedPythonFunction(name, f,
        DataType.fromJson(returnTypeJson), SQL_MAP_ARROW_ITER_UDF, true, new ArrayList<>(),
        new ArrayList<>());
    return mapInArrow(df, udf);
  }

  public static Dataset<Row> mapInArrow(Dataset<Row> df, UserDefinedPythonFunction udf) {
    List<Column> columns = new ArrayList<>();
    for (String name : df.columns()) {
      columns.add(df.col("`" + name.replace("`", "``") + "`"));
    }
    Column task = udf.apply(scala.jdk.javaapi.CollectionConverters.asScala(columns).toList());
    return df.mapInArrow(task, false, null);
  }
}
