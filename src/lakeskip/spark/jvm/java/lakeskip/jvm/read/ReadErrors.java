package lakeskip.jvm.read;

import java.io.IOException;
import java.util.Map;
import org.apache.spark.QueryContext;
import org.apache.spark.SparkRuntimeException;
import org.apache.spark.SparkThrowable;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * A reader factory whose readers turn a data file Spark cannot read (truncated, not Parquet,
 * corrupt pages: Spark's {@code FAILED_READ_FILE}) into one line naming the file, the table and
 * the root cause, instead of Spark's error with its chain of causes and stack traces.
 *
 * <p>The error is a {@link SparkRuntimeException} with a user-facing condition, so the driver
 * raises it as it is (not wrapped in "Job aborted due to stage failure") and PySpark shows its
 * message only.
 */
public final class ReadErrors implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;
  private final PartitionReaderFactory inner;
  private final String table;

  public ReadErrors(PartitionReaderFactory inner, String table) {
    this.inner = inner;
    this.table = table;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    try {
      return new Reader<>(inner.createReader(partition), table);
    } catch (Exception e) {
      throw ReadErrors.<RuntimeException>rethrow(e, table);
    }
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    try {
      return new Reader<>(inner.createColumnarReader(partition), table);
    } catch (Exception e) {
      throw ReadErrors.<RuntimeException>rethrow(e, table);
    }
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return inner.supportColumnarReads(partition);
  }

  /**
   * Throws {@code FAILED_READ_FILE} as one line and any other error unchanged (Spark throws its
   * checked {@code SparkException} from Scala code, undeclared).
   */
  @SuppressWarnings("unchecked")
  public static <T extends Exception> T rethrow(Exception e, String table) throws T {
    throw (T) translate(e, table);
  }

  private static Exception translate(Exception e, String table) {
    if (!(e instanceof SparkThrowable)) {
      return e;
    }
    String condition = ((SparkThrowable) e).getCondition();
    if (condition == null || !condition.startsWith("FAILED_READ_FILE")) {
      return e;
    }
    Map<String, String> params = ((SparkThrowable) e).getMessageParameters();
    String path = params.getOrDefault("path", "?");
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String cause = root == e ? "" : firstLine(root.getMessage());
    String message =
        "lakeskip: data file " + path + " of table " + table + " cannot be read"
            + (cause.isEmpty() ? "" : ": " + cause);
    return new SparkRuntimeException(
        "USER_RAISED_EXCEPTION",
        scala.collection.immutable.Map$.MODULE$.<String, String>empty()
            .updated("errorMessage", message),
        null,
        new QueryContext[0],
        "");
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "";
    }
    String t = s.strip();
    int nl = t.indexOf('\n');
    return nl < 0 ? t : t.substring(0, nl).strip();
  }

  private static final class Reader<T> implements PartitionReader<T> {
    private final PartitionReader<T> inner;
    private final String table;

    Reader(PartitionReader<T> inner, String table) {
      this.inner = inner;
      this.table = table;
    }

    @Override
    public boolean next() throws IOException {
      try {
        return inner.next();
      } catch (Exception e) {
        throw ReadErrors.<IOException>rethrow(e, table);
      }
    }

    @Override
    public T get() {
      try {
        return inner.get();
      } catch (Exception e) {
        throw ReadErrors.<RuntimeException>rethrow(e, table);
      }
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
      return inner.currentMetricsValues();
    }

    @Override
    public void close() throws IOException {
      inner.close();
    }
  }
}
