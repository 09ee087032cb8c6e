// Prints java.util.HashMap iteration order for maps filled by computeIfAbsent.
// Input (stdin), one case per line: "<pending 0|1> <h0> <h1> ..."; key i has hashCode h_i
// and compares by i. Output: one line per case, the key indices in iteration order.
import java.io.*;
import java.util.*;

public class HashMapOrder {
    static final class K implements Comparable<K> {
        final int id, h;
        K(int id, int h) { this.id = id; this.h = h; }
        @Override public int hashCode() { return h; }
        @Override public boolean equals(Object o) { return o instanceof K && ((K) o).id == id; }
        @Override public int compareTo(K o) { return Integer.compare(id, o.id); }
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out)));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            boolean pending = f[0].equals("1");
            HashMap<K, Integer> m = new HashMap<>();
            K[] keys = new K[f.length - 1];
            for (int i = 1; i < f.length; i++) {
                keys[i - 1] = new K(i - 1, Integer.parseInt(f[i]));
                m.computeIfAbsent(keys[i - 1], k -> k.id);
            }
            if (pending && keys.length > 0) m.computeIfAbsent(keys[0], k -> k.id);
            StringBuilder sb = new StringBuilder();
            for (K k : m.keySet()) { if (sb.length() > 0) sb.append(' '); sb.append(k.id); }
            out.println(sb);
        }
        out.flush();
    }
}
