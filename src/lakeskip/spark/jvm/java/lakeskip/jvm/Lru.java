package lakeskip.jvm;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A small bounded map that forgets the least recently used entry, safe to share between
 * threads: what the JVM side keeps between queries (tables, scans, file indexes, reader
 * factories) lives in one of these.
 */
final class Lru<K, V> {
  private final Map<K, V> map;

  Lru(int max) {
    this.map =
        new LinkedHashMap<>(max, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<K, V> e) {
            return size() > max;
          }
        };
  }

  synchronized V get(K key) {
    return map.get(key);
  }

  synchronized void put(K key, V value) {
    map.put(key, value);
  }

  synchronized void remove(K key) {
    map.remove(key);
  }

  synchronized void clear() {
    map.clear();
  }
}
