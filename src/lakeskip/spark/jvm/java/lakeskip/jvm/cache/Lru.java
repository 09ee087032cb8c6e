package lakeskip.jvm.cache;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A small bounded map that forgets the least recently used entry, safe to share between
 * threads: what the JVM side keeps between queries (tables, scans, file indexes, reader
 * factories) lives in one of these.
 */
public final class Lru<K, V> {
  private final Map<K, V> map;

  public Lru(int max) {
    this.map =
        new LinkedHashMap<>(max, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<K, V> e) {
            return size() > max;
          }
        };
  }

  public synchronized V get(K key) {
    return map.get(key);
  }

  public synchronized void put(K key, V value) {
    map.put(key, value);
  }

  public synchronized void remove(K key) {
    map.remove(key);
  }

  public synchronized void clear() {
    map.clear();
  }
}
