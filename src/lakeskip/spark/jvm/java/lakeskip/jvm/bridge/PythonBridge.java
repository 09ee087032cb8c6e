package lakeskip.jvm.bridge;

/**
 * The one callback interface, implemented in Python (lakeskip.spark.bridge.catalog_service) and
 * served by py4j's callback server. An operation name ({@link Protocol.Op}) and a JSON object
 * in, a JSON object out, of the types {@code lakeskip.spark.jvm.protocol} defines; {@code arg}
 * carries a JVM object where JSON cannot (the Dataset of a write). When an operation's JSON
 * changes, bump the version there and regenerate {@link Protocol}.
 */
public interface PythonBridge {
  String call(String op, String json, Object arg);
}
