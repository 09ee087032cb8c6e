package lakeskip.jvm.read;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.POJONode;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.zip.InflaterInputStream;
import lakeskip.jvm.bridge.Bridge;
import lakeskip.jvm.bridge.Protocol.Key;

/**
 * The data files of a scan as Python sends them ({@code ScanFiles} in {@code protocol.py}):
 * column-wise, a file's values at one position of each array; a directory, a partition's
 * values and a merge-on-read group listed once and named by position. Equal (and hashed) by
 * content: {@link LakeFileIndex#of} keys its indexes by it.
 */
public final class ScanFiles {
  /** Directories; a file's whole path is {@code dirs[dir[i]] + "/" + names[i]}. */
  private final String[] dirs;
  private final String[] names;
  /** Per file: a position in {@link #dirs}, or -1 (then its name is its whole path). */
  private final int[] dir;
  private final long[] size;
  private final long[] mtime;
  /** Each distinct partition's values (a JSON array), and per file a position in it. */
  private final JsonNode[] partitions;
  private final int[] partition;
  private final String[] groups;
  private final int[] group;
  /** Deletion vectors (base64) by file position. */
  private final Map<Integer, String> dv;
  private int hash;

  private ScanFiles(String[] dirs, String[] names, int[] dir, long[] size, long[] mtime,
      JsonNode[] partitions, int[] partition, String[] groups, int[] group,
      Map<Integer, String> dv) {
    this.dirs = dirs;
    this.names = names;
    this.dir = dir;
    this.size = size;
    this.mtime = mtime;
    this.partitions = partitions;
    this.partition = partition;
    this.groups = groups;
    this.group = group;
    this.dv = dv;
    int n = names.length;
    if (dir.length != n || size.length != n || mtime.length != n || partition.length != n
        || group.length != n) {
      throw Bridge.error("lakeskip: a scan's file columns differ in length", null);
    }
  }

  /**
   * The files of a reply's {@code files} object (a missing one: no file); {@link
   * Bridge#read} has parsed it already (a {@link POJONode} holding them).
   */
  public static ScanFiles of(JsonNode files) {
    if (files instanceof POJONode && ((POJONode) files).getPojo() instanceof ScanFiles) {
      return (ScanFiles) ((POJONode) files).getPojo();
    }
    Map<Integer, String> dv = new HashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = files.path(Key.DV).fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      dv.put(Integer.parseInt(e.getKey()), e.getValue().asText());
    }
    JsonNode parts = files.path(Key.PARTITIONS);
    JsonNode[] partitions = new JsonNode[parts.size()];
    for (int i = 0; i < partitions.length; i++) {
      partitions[i] = parts.get(i);
    }
    return new ScanFiles(strings(files.path(Key.DIRS)), strings(files.path(Key.NAMES)),
        ints(packed(files.path(Key.DIR))), packed(files.path(Key.SIZE)),
        packed(files.path(Key.MTIME)), partitions, ints(packed(files.path(Key.PARTITION))),
        strings(files.path(Key.GROUPS)), ints(packed(files.path(Key.GROUP))), dv);
  }

  /**
   * Files given one by one (no group, no deletion vector): {@code partitions.get(i)} the
   * values of {@code paths.get(i)}, equal values listed once.
   */
  public static ScanFiles of(List<String> paths, long[] sizes, List<JsonNode> partitions) {
    int n = paths.size();
    Map<JsonNode, Integer> distinct = new java.util.LinkedHashMap<>();
    int[] partition = new int[n];
    for (int i = 0; i < n; i++) {
      partition[i] = distinct.computeIfAbsent(partitions.get(i), k -> distinct.size());
    }
    int[] dir = new int[n];
    Arrays.fill(dir, -1);
    return new ScanFiles(new String[0], paths.toArray(new String[0]), dir, sizes, new long[n],
        distinct.keySet().toArray(new JsonNode[0]), partition, new String[] {""}, new int[n],
        new HashMap<>());
  }

  /**
   * The files of the {@code files} object {@code p} is at (its START_OBJECT), read token by
   * token into the columns: what {@link #of(JsonNode)} makes of its tree, without the tree.
   */
  public static ScanFiles parse(JsonParser p) throws IOException {
    String[] dirs = new String[0];
    String[] names = new String[0];
    String[] groups = new String[0];
    int[] dir = new int[0];
    int[] partition = new int[0];
    int[] group = new int[0];
    long[] size = new long[0];
    long[] mtime = new long[0];
    JsonNode[] partitions = new JsonNode[0];
    Map<Integer, String> dv = new HashMap<>();
    for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
      JsonToken t = p.nextToken();
      if (t == JsonToken.VALUE_STRING) { // a packed column (others: as the tree's, ignored)
        switch (field) {
          case Key.DIR -> dir = ints(unpack(p.getText()));
          case Key.PARTITION -> partition = ints(unpack(p.getText()));
          case Key.GROUP -> group = ints(unpack(p.getText()));
          case Key.SIZE -> size = unpack(p.getText());
          case Key.MTIME -> mtime = unpack(p.getText());
          default -> { }
        }
        continue;
      }
      if (t != JsonToken.START_ARRAY && t != JsonToken.START_OBJECT) {
        continue; // a scalar where a column belongs: as the tree's path() of it, empty
      }
      switch (field) {
        case Key.DIRS -> dirs = strings(p);
        case Key.NAMES -> names = strings(p);
        case Key.GROUPS -> groups = strings(p);
        case Key.PARTITIONS -> {
          List<JsonNode> out = new ArrayList<>();
          while (p.nextToken() != JsonToken.END_ARRAY) {
            out.add(Bridge.readValue(p));
          }
          partitions = out.toArray(new JsonNode[0]);
        }
        case Key.DV -> {
          while (p.nextToken() == JsonToken.FIELD_NAME) {
            int at = Integer.parseInt(p.currentName());
            p.nextToken();
            dv.put(at, Bridge.readValue(p).asText());
          }
        }
        default -> p.skipChildren();
      }
    }
    return new ScanFiles(dirs, names, dir, size, mtime, partitions, partition, groups, group, dv);
  }

  /** The array {@code p} is at, each value as {@link JsonNode#asText} has it. */
  private static String[] strings(JsonParser p) throws IOException {
    if (p.currentToken() != JsonToken.START_ARRAY) {
      p.skipChildren();
      return new String[0];
    }
    List<String> out = new ArrayList<>();
    for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
      out.add(t == JsonToken.VALUE_STRING ? p.getText() : Bridge.readValue(p).asText());
    }
    return out.toArray(new String[0]);
  }

  private static String[] strings(JsonNode a) {
    String[] out = new String[a.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = a.get(i).asText();
    }
    return out;
  }

  /**
   * A packed column ({@code pack_longs} in {@code protocol.py}: base64 of zlib-compressed
   * 64-bit little-endian values); a node that is not text (a missing column): none.
   */
  private static long[] packed(JsonNode n) {
    return n.isTextual() ? unpack(n.asText()) : new long[0];
  }

  private static long[] unpack(String text) {
    if (text.isEmpty()) {
      return new long[0];
    }
    byte[] raw;
    try (InflaterInputStream in =
        new InflaterInputStream(new ByteArrayInputStream(Base64.getDecoder().decode(text)))) {
      raw = in.readAllBytes();
    } catch (IllegalArgumentException | IOException e) {
      throw Bridge.error("lakeskip: a packed file column is not base64 of zlib data", e);
    }
    if (raw.length % 8 != 0) {
      throw Bridge.error("lakeskip: a packed file column of " + raw.length + " bytes", null);
    }
    long[] out = new long[raw.length / 8];
    ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(out);
    return out;
  }

  /** Positions (of a directory, partition, group): each within {@code int}. */
  private static int[] ints(long[] values) {
    int[] out = new int[values.length];
    for (int i = 0; i < out.length; i++) {
      if (values[i] != (int) values[i]) {
        throw Bridge.error("lakeskip: a file column's position out of range", null);
      }
      out[i] = (int) values[i];
    }
    return out;
  }

  public int size() {
    return names.length;
  }

  /** File {@code i}'s path as Python wrote it. */
  public String path(int i) {
    int d = dir[i];
    return d < 0 ? names[i] : dirs[d] + "/" + names[i];
  }

  /** File {@code i}'s name in its directory (its whole path where {@link #dir} is -1). */
  String name(int i) {
    return names[i];
  }

  /** How many directories the files' {@link #dir} positions name. */
  int dirCount() {
    return dirs.length;
  }

  /** File {@code i}'s directory position ({@code -1}: its name is its whole path). */
  int dir(int i) {
    return dir[i];
  }

  public long fileSize(int i) {
    return size[i];
  }

  public long mtime(int i) {
    return mtime[i];
  }

  /** The position of file {@code i}'s partition values among {@link #partitionValues}. */
  public int partition(int i) {
    return partition[i];
  }

  /** Partition values {@code p} (a JSON array, in the partition schema's order). */
  public JsonNode partitionValues(int p) {
    return partitions[p];
  }

  public int partitionCount() {
    return partitions.length;
  }

  /** File {@code i}'s merge-on-read unit (a primary-key table's partition and bucket). */
  public String group(int i) {
    return groups[group[i]];
  }

  /** Deletion vectors by file name (the last part of its path). */
  public Map<String, byte[]> vectorsByName() {
    Map<String, byte[]> out = new HashMap<>();
    for (Map.Entry<Integer, String> e : dv.entrySet()) {
      String path = path(e.getKey());
      out.put(path.substring(path.lastIndexOf('/') + 1), Base64.getDecoder().decode(e.getValue()));
    }
    return out;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof ScanFiles)) {
      return false;
    }
    ScanFiles f = (ScanFiles) o;
    return hashCode() == f.hashCode() && Arrays.equals(names, f.names)
        && Arrays.equals(dir, f.dir) && Arrays.equals(dirs, f.dirs)
        && Arrays.equals(size, f.size) && Arrays.equals(mtime, f.mtime)
        && Arrays.equals(partition, f.partition) && Arrays.equals(partitions, f.partitions)
        && Arrays.equals(group, f.group) && Arrays.equals(groups, f.groups) && dv.equals(f.dv);
  }

  @Override
  public int hashCode() {
    int h = hash;
    if (h == 0) {
      h = Arrays.hashCode(names);
      h = 31 * h + Arrays.hashCode(dir);
      h = 31 * h + Arrays.hashCode(dirs);
      h = 31 * h + Arrays.hashCode(size);
      h = 31 * h + Arrays.hashCode(mtime);
      h = 31 * h + Arrays.hashCode(partition);
      h = 31 * h + Arrays.hashCode(partitions);
      h = 31 * h + Arrays.hashCode(group);
      h = 31 * h + Arrays.hashCode(groups);
      h = 31 * h + dv.hashCode();
      hash = h == 0 ? 1 : h;
    }
    return hash;
  }
}
