package lakeskip.jvm.bridge;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.python.Py4JServer;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The Python brain of a JVM that has none: {@code spark-sql}, the Thrift JDBC server, a Spark
 * Connect server, a Java or Scala application. The first callback finding no handler starts
 * Spark's own py4j server ({@code Py4JServer}: 127.0.0.1, random port, auth secret) and
 * {@code <python> -m lakeskip.spark.front.brain}, which connects back, wraps this JVM's SparkContext
 * and SparkSession as PySpark objects and registers the same catalog service a PySpark driver
 * registers in-process ({@link #register}); Spark work runs only inside callbacks (the thread
 * that started it may hold Spark's catalog lock while it waits here).
 *
 * <p>One brain per JVM, started under a lock with a start-up timeout; its output goes to one
 * log file that every brain error names. If it dies, the next callback starts it again; a
 * start that fails is one line naming the log. It exits with the JVM: a shutdown hook ends it,
 * and it watches its stdin (EOF when this JVM is gone, also after {@code kill -9}) and its
 * parent pid; its py4j server's threads are daemons ({@link #startAsDaemon}), so they never
 * keep the JVM up. A PySpark driver that registers its own handler ({@link Bridge#register})
 * ends a brain started before it: no second Python process.
 *
 * <p>The Python is the catalog option {@code python}, else {@code spark.pyspark.driver.python},
 * {@code spark.pyspark.python}, {@code PYSPARK_DRIVER_PYTHON}, {@code PYSPARK_PYTHON}, else
 * {@code python3}. Catalog option {@code brain-timeout} (seconds, default 180) bounds start-up.
 */
public final class Brain {
  static final String MODULE = "lakeskip.spark.front.brain";
  private static final Object LOCK = new Object();
  private static Py4JServer server;
  private static Process process;
  private static String token;
  private static File log;
  private static boolean hooked;
  private static boolean starting;
  private static volatile PythonBridge owned;
  private static volatile String pythonOption;
  private static volatile long timeoutMillis = 180_000L;

  private Brain() {}

  /** A lakeskip catalog's options: {@code python}, {@code brain-timeout} (first one set wins). */
  public static void configure(CaseInsensitiveStringMap options) {
    String p = options.get("python");
    if (p != null && !p.isBlank() && pythonOption == null) {
      pythonOption = p.strip();
    }
    String t = options.get("brain-timeout");
    if (t != null && !t.isBlank()) {
      try {
        timeoutMillis = Math.max(1L, Long.parseLong(t.strip())) * 1000L;
      } catch (NumberFormatException e) {
        throw Bridge.error("lakeskip catalog option brain-timeout must be whole seconds, got "
            + t, null);
      }
    }
  }

  /** Whether {@code h} is the handler of a brain this JVM started (false: in-process). */
  static boolean owns(PythonBridge h) {
    return h != null && h == owned;
  }

  /** Whether the brain process this JVM started is running (waits briefly for a dying one). */
  static boolean alive() {
    Process p;
    synchronized (LOCK) {
      p = process;
    }
    if (p == null) {
      return false;
    }
    try {
      return !p.waitFor(200, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return p.isAlive();
    }
  }

  /** The log file of the brain ({@code null} before the first start). */
  public static String logPath() {
    synchronized (LOCK) {
      return log == null ? null : log.getAbsolutePath();
    }
  }

  /** The pid of the running brain, or -1. */
  public static long pid() {
    synchronized (LOCK) {
      return process != null && process.isAlive() ? process.pid() : -1L;
    }
  }

  /** How a dead brain's call ends: one line naming the log; the next call starts it again. */
  static RuntimeException died(String op) {
    Process p;
    synchronized (LOCK) {
      p = process;
    }
    String code = "";
    if (p != null && !p.isAlive()) {
      code = " (exit code " + p.exitValue() + ")";
    }
    return Bridge.error("lakeskip: the Python brain exited during " + op + code
        + "; the next statement starts it again; log: " + logPath(), null);
  }

  // -- what the Python brain asks for --------------------------------------------------------

  /** This JVM's SparkContext (the brain wraps it as PySpark's). */
  public static SparkContext sparkContext() {
    return SparkContext.getOrCreate();
  }

  /** The session the brain serves by default (each callback names its own where it matters). */
  public static SparkSession session() {
    scala.Option<SparkSession> s = SparkSession.getDefaultSession();
    return s.isDefined() ? s.get() : SparkSession.active();
  }

  /** The brain registers its handler; {@code secret} proves it is the process started here. */
  public static int register(PythonBridge h, String secret) {
    synchronized (LOCK) {
      if (token == null || !token.equals(secret)) {
        throw new IllegalStateException("lakeskip brain registration with a wrong token");
      }
      owned = h;
      Bridge.install(h);
      LOCK.notifyAll();
    }
    return Bridge.PROTOCOL;
  }

  /** A PySpark driver registered its own handler: a brain started earlier is not needed. */
  static void retire() {
    synchronized (LOCK) {
      owned = null;
      token = null;
      if (process != null) {
        process.destroy();
        process = null;
      }
    }
  }

  // -- starting it ---------------------------------------------------------------------------

  /**
   * The handler to call: the registered one, unless it is a brain that died; otherwise a
   * newly started brain's. Throws a one-line AnalysisException naming the log on failure.
   */
  static PythonBridge handler() {
    PythonBridge h = Bridge.current();
    if (h != null && (h != owned || processRunning())) {
      return h;
    }
    synchronized (LOCK) {
      // start() waits with LOCK released: another thread's start is waited for, not repeated
      while (starting) {
        try {
          LOCK.wait(100);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw Bridge.error("lakeskip: interrupted while its Python brain was starting", null);
        }
      }
      h = Bridge.current();
      if (h != null && (h != owned || processRunning())) {
        return h;
      }
      if (h != null) {
        Bridge.uninstall(h); // our brain died since the last call
      }
      starting = true;
      try {
        return start();
      } finally {
        starting = false;
        LOCK.notifyAll();
      }
    }
  }

  private static boolean processRunning() {
    Process p = process;
    return p != null && p.isAlive();
  }

  private static PythonBridge start() {
    SparkEnv env = SparkEnv.get();
    if (env == null) {
      throw Bridge.error("lakeskip catalog has no Python handler and no running SparkContext to"
          + " start one for: use it from a Spark application", null);
    }
    SparkConf conf = env.conf();
    String python = python(conf);
    try {
      // a py4j server of its own for each brain: the proxy of a dead brain's handler, once
      // garbage collected, tells its gateway to forget its object id -- a shared gateway
      // would pass that on to the next brain, which hands out the same ids
      if (server != null) {
        server.shutdown();
        server = null;
      }
      server = startAsDaemon(conf);
      if (log == null) {
        log = File.createTempFile(
            "lakeskip-brain-" + ProcessHandle.current().pid() + "-", ".log");
      }
      if (!hooked) {
        hooked = true;
        Runtime.getRuntime().addShutdownHook(new Thread(Brain::shutdown, "lakeskip-brain-stop"));
      }
      byte[] nonce = new byte[16];
      new SecureRandom().nextBytes(nonce);
      token = HexFormat.of().formatHex(nonce);
      owned = null;
      ProcessBuilder pb = new ProcessBuilder(python, "-m", MODULE);
      Map<String, String> e = pb.environment();
      // a Spark Connect client's settings would make PySpark refuse to wrap this JVM's context
      for (String key : new String[] {"SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED",
          "SPARK_LOCAL_REMOTE", "SPARK_API_MODE"}) {
        e.remove(key);
      }
      e.put("PYSPARK_GATEWAY_PORT", String.valueOf(server.getListeningPort()));
      e.put("PYSPARK_GATEWAY_SECRET", server.secret());
      e.put("LAKESKIP_BRAIN_TOKEN", token);
      e.put("LAKESKIP_BRAIN_PARENT", String.valueOf(ProcessHandle.current().pid()));
      String workers = conf.get("spark.pyspark.python", System.getenv("PYSPARK_PYTHON"));
      e.put("PYSPARK_PYTHON", workers == null || workers.isBlank() ? python : workers);
      pb.redirectErrorStream(true);
      pb.redirectOutput(ProcessBuilder.Redirect.appendTo(log));
      // stdin stays a pipe from this JVM: EOF tells the brain the JVM is gone (even kill -9)
      pb.redirectInput(ProcessBuilder.Redirect.PIPE);
      appendLog("-- " + Instant.now() + " starting " + python + " -m " + MODULE);
      process = pb.start();
    } catch (IOException | RuntimeException ex) {
      throw fail(python, "cannot start it: " + ex.getMessage());
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    while (owned == null) {
      if (!process.isAlive()) {
        throw fail(python, "it exited with code " + process.exitValue() + " while starting");
      }
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left <= 0) {
        process.destroyForcibly();
        throw fail(python, "it did not register within " + timeoutMillis / 1000
            + " s (catalog option brain-timeout)");
      }
      try {
        LOCK.wait(Math.min(left, 100L));
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
        throw fail(python, "interrupted while waiting for it");
      }
    }
    return owned;
  }

  /**
   * A started py4j server whose threads are daemons. py4j's threads are plain
   * {@code new Thread}s, daemons exactly when the thread creating them is (py4j's
   * {@code ClientServer} starts its accept thread as it is built): built and started on a
   * daemon thread, the accept thread and every connection thread it starts are daemons, so
   * they never keep the JVM up once its application is done ({@code spark-submit app.py} of
   * an app that registered no handler of its own would otherwise never exit). The brain
   * process ends in the shutdown hook.
   */
  private static Py4JServer startAsDaemon(SparkConf conf) {
    Object[] result = new Object[1];
    Thread t = new Thread(() -> {
      try {
        Py4JServer s = new Py4JServer(conf);
        s.start();
        result[0] = s;
      } catch (RuntimeException e) {
        result[0] = e;
      }
    }, "lakeskip-brain-py4j-start");
    t.setDaemon(true);
    t.start();
    try {
      t.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while starting the py4j server", e);
    }
    if (result[0] instanceof RuntimeException e) {
      throw e;
    }
    return (Py4JServer) result[0];
  }

  private static RuntimeException fail(String python, String why) {
    String tail = lastLogLine();
    return Bridge.error("lakeskip could not start its Python brain (" + python + " -m " + MODULE
        + "): " + why + (tail.isEmpty() ? "" : "; last log line: " + tail) + "; log: "
        + (log == null ? "(none)" : log.getAbsolutePath()), null);
  }

  static String python(SparkConf conf) {
    if (pythonOption != null) {
      return pythonOption;
    }
    for (String key : new String[] {"spark.pyspark.driver.python", "spark.pyspark.python"}) {
      String v = conf.get(key, null);
      if (v != null && !v.isBlank()) {
        return v.strip();
      }
    }
    for (String key : new String[] {"PYSPARK_DRIVER_PYTHON", "PYSPARK_PYTHON"}) {
      String v = System.getenv(key);
      if (v != null && !v.isBlank()) {
        return v.strip();
      }
    }
    return "python3";
  }

  private static void appendLog(String line) {
    try (RandomAccessFile f = new RandomAccessFile(log, "rw")) {
      f.seek(f.length());
      f.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      // the log is a courtesy; the start itself reports what failed
    }
  }

  private static String lastLogLine() {
    if (log == null) {
      return "";
    }
    try (RandomAccessFile f = new RandomAccessFile(log, "r")) {
      long len = f.length();
      int n = (int) Math.min(len, 4096);
      byte[] buf = new byte[n];
      f.seek(len - n);
      f.readFully(buf);
      String[] lines = new String(buf, StandardCharsets.UTF_8).strip().split("\n");
      return lines.length == 0 ? "" : lines[lines.length - 1].strip();
    } catch (IOException e) {
      return "";
    }
  }

  private static void shutdown() {
    Process p;
    synchronized (LOCK) {
      p = process;
      process = null;
    }
    if (p != null) {
      p.destroy();
      try {
        if (!p.waitFor(2, TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
      } catch (InterruptedException e) {
        p.destroyForcibly();
      }
    }
  }
}
