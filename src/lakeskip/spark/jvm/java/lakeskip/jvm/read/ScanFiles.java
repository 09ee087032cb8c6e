package lakeskip.jvm.read;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
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

  /** The files of a reply's {@code files} object (a missing one: no file). */
  public static ScanFiles of(JsonNode files) {
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
        ints(files.path(Key.DIR)), longs(files.path(Key.SIZE)), longs(files.path(Key.MTIME)),
        partitions, ints(files.path(Key.PARTITION)), strings(files.path(Key.GROUPS)),
        ints(files.path(Key.GROUP)), dv);
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

  private static String[] strings(JsonNode a) {
    String[] out = new String[a.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = a.get(i).asText();
    }
    return out;
  }

  private static int[] ints(JsonNode a) {
    int[] out = new int[a.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = a.get(i).asInt();
    }
    return out;
  }

  private static long[] longs(JsonNode a) {
    long[] out = new long[a.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = a.get(i).asLong();
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
