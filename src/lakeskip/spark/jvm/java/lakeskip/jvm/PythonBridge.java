package lakeskip.jvm;

/**
 * The one callback interface, implemented in Python (lakeskip.spark.bridge.catalog_service) and
 * served by py4j's callback server. An operation name and a JSON object in, a JSON object
 * out; {@code arg} carries a JVM object where JSON cannot (the Dataset of a write).
 * Bump {@link Bridge#PROTOCOL} when an operation's JSON changes.
 */
public interface PythonBridge {
  String call(String op, String json, Object arg);
}
