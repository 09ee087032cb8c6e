package lakeskip.jvm.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import lakeskip.jvm.bridge.Protocol.Key;
import lakeskip.jvm.cache.Lru;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.Identifier;

/**
 * Tables Python loaded, reused while the metadata files Python named prove them current.
 *
 * <p>Why: loading a table is a Python callback on every query (about 1.5 ms, most of it
 * py4j's round trip), though a repeated query on an unchanged table gets the same answer.
 * Python decides what "unchanged" means: with the latest table it sends the files whose
 * appearance would mean a newer schema or snapshot, and the SHA-256 of the schema and
 * snapshot files it read ({@code Catalog.get_table_version}). Java only checks those facts
 * through Spark's Hadoop filesystem (the one that reads the data files): if any file
 * appeared, differs, or cannot be read, Python is asked again. Time travel loads are not
 * kept. Bounded (LRU); {@link #clear} when a catalog is re-bound to another warehouse.
 */
public final class TableCache {
  private static final Lru<List<Object>, Entry> CACHE = new Lru<>(64);

  private TableCache() {}

  private static final class Entry {
    final LakeTable table;
    final List<Path> absent = new ArrayList<>();
    final List<Path> files = new ArrayList<>();
    final List<String> digests = new ArrayList<>();

    Entry(LakeTable table) {
      this.table = table;
    }
  }

  /** Per catalog instance (its warehouse) and table; Spark's identifiers compare by value. */
  private static List<Object> key(LakeOps ops, Identifier ident) {
    return Arrays.asList(ops, ident);
  }

  /** The cached table if every fact Python named still holds, else null. */
  public static LakeTable get(LakeOps ops, Identifier ident) {
    Entry e = CACHE.get(key(ops, ident));
    if (e == null) {
      return null;
    }
    Configuration conf = SparkSession.active().sparkContext().hadoopConfiguration();
    try {
      for (Path p : e.absent) {
        if (exists(p, conf)) {
          return null;
        }
      }
      for (int i = 0; i < e.files.size(); i++) {
        if (!sha256(read(e.files.get(i), conf)).equals(e.digests.get(i))) {
          return null;
        }
      }
    } catch (IOException | RuntimeException ex) {
      return null; // unreadable here: Python decides
    }
    return e.table;
  }

  /** Keep a freshly loaded table, if Python said how to tell that it is still current. */
  static void put(LakeOps ops, Identifier ident, LakeTable table, JsonNode reply) {
    JsonNode facts = reply.path(Key.UNCHANGED_WHILE);
    if (!facts.isObject()) {
      return;
    }
    Entry e = new Entry(table);
    for (JsonNode p : facts.path(Key.ABSENT)) {
      e.absent.add(new Path(p.asText()));
    }
    for (JsonNode f : facts.path(Key.SHA256)) {
      e.files.add(new Path(f.get(0).asText()));
      e.digests.add(f.get(1).asText());
    }
    CACHE.put(key(ops, ident), e);
  }

  /** Forget one table (a DDL through this catalog). */
  static void forget(LakeOps ops, Identifier ident) {
    CACHE.remove(key(ops, ident));
  }

  /** Forget every table (a catalog re-bound to another warehouse; tests). */
  public static void clear() {
    CACHE.clear();
  }

  /**
   * A local file through java.nio: Hadoop's local filesystem costs about 0.7 ms per read
   * (UGI lookup, checksum side file), a third of what this cache saves.
   */
  private static java.nio.file.Path local(Path p) {
    java.net.URI u = p.toUri();
    return "file".equals(u.getScheme()) ? java.nio.file.Paths.get(u) : null;
  }

  private static boolean exists(Path p, Configuration conf) throws IOException {
    java.nio.file.Path l = local(p);
    return l != null ? java.nio.file.Files.exists(l) : p.getFileSystem(conf).exists(p);
  }

  private static byte[] read(Path p, Configuration conf) throws IOException {
    java.nio.file.Path l = local(p);
    if (l != null) {
      return java.nio.file.Files.readAllBytes(l);
    }
    try (InputStream in = p.getFileSystem(conf).open(p)) {
      return in.readAllBytes();
    }
  }

  private static String sha256(byte[] data) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
