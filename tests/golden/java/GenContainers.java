import org.apache.paimon.CoreOptions;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.fileindex.FileIndexOptions;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.io.DataFileIndexWriter;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowType;

import java.io.File;
import java.io.PrintWriter;
import java.util.*;

/** Whole containers written by Paimon 0.9.0's DataFileIndexWriter (one index type per column). */
public class GenContainers {
    static StringBuilder out = new StringBuilder();
    static boolean first = true;
    static boolean MULTI = false;

    static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x & 0xff));
        return s.toString();
    }

    /** cols: name -> type ("INT","BIGINT","STRING","MAP"); opts in insertion order. */
    static void emit(String name, List<String> names, List<String> types,
                     LinkedHashMap<String, String> opts, List<Object[]> rows, String tmp) throws Exception {
        DataType[] dts = new DataType[names.size()];
        for (int i = 0; i < dts.length; i++) {
            switch (types.get(i)) {
                case "INT": dts[i] = DataTypes.INT(); break;
                case "BIGINT": dts[i] = DataTypes.BIGINT(); break;
                case "STRING": dts[i] = DataTypes.STRING(); break;
                default: dts[i] = DataTypes.MAP(DataTypes.STRING(), DataTypes.STRING());
            }
        }
        RowType rt = RowType.of(dts, names.toArray(new String[0]));
        DataFileIndexWriter w = new DataFileIndexWriter(LocalFileIO.create(),
                new Path(tmp + "/" + name + ".index"), rt, new FileIndexOptions(new CoreOptions(opts)), null);
        StringBuilder rj = new StringBuilder("[");
        for (int c = 0; c < names.size(); c++) {
            rj.append(c == 0 ? "[" : ",[");
            for (int r = 0; r < rows.size(); r++) {
                Object v = rows.get(r)[c];
                if (r > 0) rj.append(',');
                if (v == null) rj.append("null");
                else if (v instanceof String) rj.append(q((String) v));
                else if (v instanceof Map) {
                    rj.append('{');
                    boolean f = true;
                    for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                        if (!f) rj.append(',');
                        f = false;
                        rj.append(q((String) e.getKey())).append(':').append(q((String) e.getValue()));
                    }
                    rj.append('}');
                } else rj.append(v);
            }
            rj.append(']');
        }
        rj.append(']');
        for (Object[] row : rows) {
            Object[] conv = new Object[row.length];
            for (int c = 0; c < row.length; c++) {
                Object v = row[c];
                if (v instanceof String) conv[c] = BinaryString.fromString((String) v);
                else if (v instanceof Map) {
                    Map<Object, Object> m = new LinkedHashMap<>();
                    for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet())
                        m.put(BinaryString.fromString((String) e.getKey()), BinaryString.fromString((String) e.getValue()));
                    conv[c] = new GenericMap(m);
                } else conv[c] = v;
            }
            w.write(GenericRow.of(conv));
        }
        w.close();
        byte[] bytes = w.result().embeddedIndexBytes();
        if (bytes == null) throw new IllegalStateException(name + ": not embedded");
        StringBuilder oj = new StringBuilder("[");
        boolean f = true;
        for (Map.Entry<String, String> e : opts.entrySet()) {
            if (!f) oj.append(',');
            f = false;
            oj.append('[').append(q(e.getKey())).append(',').append(q(e.getValue())).append(']');
        }
        oj.append(']');
        StringBuilder fj = new StringBuilder("[");
        for (int i = 0; i < names.size(); i++) {
            if (i > 0) fj.append(',');
            fj.append('[').append(q(names.get(i))).append(',').append(q(types.get(i))).append(']');
        }
        fj.append(']');
        out.append(first ? "\n" : ",\n");
        first = false;
        out.append("{\"case\":").append(q(name)).append(",\"fields\":").append(fj)
                .append(",\"options\":").append(oj).append(",\"rows\":").append(rj)
                .append(",\"hex\":").append(q(hex(bytes))).append('}');
    }

    static String randName(Random r, Set<String> used) {
        String letters = "abcdefghijklmnopqrstuvwxyz_";
        while (true) {
            int len = 1 + r.nextInt(6);
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < len; i++) b.append(letters.charAt(r.nextInt(i == 0 ? 26 : 27)));
            String s = b.toString();
            if (used.add(s)) return s;
        }
    }

    static Object value(Random r, String type, int row) {
        if (r.nextInt(8) == 0) return null;
        switch (type) {
            case "INT": return r.nextInt(7) - 3;
            case "BIGINT": return (long) r.nextInt(1000) * 1_000_003L - 400_000_000L;
            case "STRING": return "v" + r.nextInt(9) + (r.nextBoolean() ? "é" : "");
            default: {
                Map<String, String> m = new LinkedHashMap<>();
                for (String k : new String[] {"k1", "k2", "key3", "a", "zz"})
                    if (r.nextInt(3) > 0) m.put(k, "x" + r.nextInt(4));
                return m;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String tmp = args[1];
        MULTI = args.length > 2 && args[2].equals("multi");
        String gen = args.length > 3 ? args[3] : "Paimon 0.9.0 DataFileIndexWriter";
        new File(tmp).mkdirs();
        // random cases: 3..16 plain columns, one index type each, shuffled option order,
        // optional unrelated table options (root map capacity), optional map keys
        for (int seed = 1; seed <= 40; seed++) {
            Random r = new Random(seed);
            int n = 3 + r.nextInt(14);
            Set<String> used = new HashSet<>();
            List<String> names = new ArrayList<>(), types = new ArrayList<>();
            String[] tps = {"INT", "BIGINT", "STRING"};
            for (int i = 0; i < n; i++) {
                names.add(randName(r, used));
                types.add(tps[r.nextInt(3)]);
            }
            boolean withMap = seed % 4 == 0;
            if (withMap) {
                names.add("m" + randName(r, used));
                types.add("MAP");
            }
            List<String> bloom = new ArrayList<>(), bitmap = new ArrayList<>();
            List<String[]> perCol = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                if (MULTI && !types.get(i).equals("BIGINT") && r.nextInt(3) == 0) {
                    bloom.add(names.get(i));
                    bitmap.add(names.get(i));
                    perCol.add(new String[] {"file-index.bloom-filter." + names.get(i) + ".items", "" + (20 + r.nextInt(40))});
                    perCol.add(new String[] {"file-index.bitmap." + names.get(i) + ".version", "1"});
                } else if (types.get(i).equals("BIGINT") || r.nextBoolean()) {
                    bloom.add(names.get(i));
                    perCol.add(new String[] {"file-index.bloom-filter." + names.get(i) + ".items", "" + (20 + r.nextInt(40))});
                } else {
                    bitmap.add(names.get(i));
                    perCol.add(new String[] {"file-index.bitmap." + names.get(i) + ".version", "1"});
                }
            }
            if (withMap) {
                String m = names.get(n);
                List<String> keys = new ArrayList<>(Arrays.asList("k1", "k2", "key3", "a", "zz"));
                Collections.shuffle(keys, r);
                int nk = 2 + r.nextInt(4);
                for (int i = 0; i < nk; i++) bloom.add(m + "[" + keys.get(i) + "]");
                perCol.add(new String[] {"file-index.bloom-filter." + m + ".items", "30"});
            }
            Collections.shuffle(bloom, r);
            Collections.shuffle(bitmap, r);
            List<String[]> entries = new ArrayList<>(perCol);
            if (!bloom.isEmpty()) entries.add(new String[] {"file-index.bloom-filter.columns", String.join(",", bloom)});
            if (!bitmap.isEmpty()) entries.add(new String[] {"file-index.bitmap.columns", String.join(",", bitmap)});
            entries.add(new String[] {"file-index.in-manifest-threshold", "1 mb"});
            int extra = r.nextInt(3) == 0 ? 5 + r.nextInt(20) : r.nextInt(3);
            for (int i = 0; i < extra; i++) entries.add(new String[] {"my.option." + i, "v" + i});
            Collections.shuffle(entries, r);
            entries.add(new String[] {"path", "file:/tmp/wh/db.db/t" + seed});
            LinkedHashMap<String, String> opts = new LinkedHashMap<>();
            for (String[] e : entries) opts.put(e[0], e[1]);
            List<Object[]> rows = new ArrayList<>();
            for (int row = 0; row < 24; row++) {
                Object[] vals = new Object[names.size()];
                for (int c = 0; c < names.size(); c++) vals[c] = value(r, types.get(c), row);
                rows.add(vals);
            }
            emit("random-" + seed, names, types, opts, rows, tmp);
        }
        try (PrintWriter pw = new PrintWriter(args[0], "UTF-8")) {
            pw.print("{\"generator\": \"GenContainers.java against " + gen + "\",");
            pw.print(" \"note\": \"see tests/golden/README.md\", \"cases\": [");
            pw.print(out);
            pw.println("\n]}");
        }
    }
}
