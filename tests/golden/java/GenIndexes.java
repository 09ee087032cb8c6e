/*
 * Index payloads written by a Paimon release's own index writers, for lakeskip's byte-identity
 * tests (tests/unit/index/test_java_golden.py, tests/golden/README.md). Run against Paimon 2.0.0:
 *
 *   javac -d classes -cp paimon-flink-2.0-2.0.0.jar GenIndexes.java
 *   java -cp classes:paimon-flink-2.0-2.0.0.jar:<pyspark jars/hadoop-client-api,runtime,slf4j-api> \
 *       GenIndexes index_writers_2_0.json "Apache Paimon 2.0.0 (org.apache.paimon:paimon-flink-2.0:2.0.0)"
 *
 * Each case: FileIndexer.create(index_type, type, options).createWriter(), writeRecord(v) per
 * value (internal form), serializedBytes(). Values are java.util.Random(seed) draws, about one
 * in eight null; JSON forms as in the other files of tests/golden/java (DATE = epoch day,
 * TIMESTAMP(3) = epoch millis, TIMESTAMP(6) = epoch micros, DOUBLE finite numbers).
 */

import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.fileindex.FileIndexWriter;
import org.apache.paimon.fileindex.FileIndexer;
import org.apache.paimon.options.Options;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;

import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

public class GenIndexes {
    static final StringBuilder OUT = new StringBuilder();
    static boolean first = true;

    public static void main(String[] args) throws Exception {
        OUT.append("{\"generator\": \"tests/golden/java/GenIndexes.java\", \"note\": ")
                .append(quote(args[1]))
                .append(", \"cases\": [\n");
        String[] types = {"INT", "BIGINT", "STRING", "DOUBLE", "DATE", "TIMESTAMP(3)", "TIMESTAMP(6)", "SMALLINT", "BOOLEAN"};
        int seed = 100;
        for (String t : types) {
            for (int[] shape : new int[][] {{1, 5}, {40, 12}, {300, 90}}) {
                seed++;
                List<Object> vals = values(t, shape[0], shape[1], new Random(seed));
                Map<String, String> bloom = new LinkedHashMap<>();
                bloom.put("items", Integer.toString(Math.max(10, shape[1])));
                bloom.put("fpp", "0.05");
                if (!t.equals("BOOLEAN")) emit("bloom-filter", t, bloom, vals, "seed " + seed);
                for (String v : new String[] {"1", "2"}) {
                    Map<String, String> bm = new LinkedHashMap<>();
                    bm.put("version", v);
                    emit("bitmap", t, bm, vals, "seed " + seed);
                }
                Map<String, String> none = new LinkedHashMap<>();
                emit("range-bitmap", t, none, vals, "seed " + seed);
                if (t.equals("INT") || t.equals("BIGINT") || t.equals("DATE") || t.equals("SMALLINT")) {
                    emit("bsi", t, none, vals, "seed " + seed);
                }
            }
        }
        OUT.append("\n]}\n");
        try (Writer w = new OutputStreamWriter(new FileOutputStream(args[0]), StandardCharsets.UTF_8)) {
            w.write(OUT.toString());
        }
    }

    static DataType type(String t) {
        switch (t) {
            case "INT": return DataTypes.INT();
            case "BIGINT": return DataTypes.BIGINT();
            case "STRING": return DataTypes.STRING();
            case "DOUBLE": return DataTypes.DOUBLE();
            case "DATE": return DataTypes.DATE();
            case "TIMESTAMP(3)": return DataTypes.TIMESTAMP(3);
            case "TIMESTAMP(6)": return DataTypes.TIMESTAMP(6);
            case "SMALLINT": return DataTypes.SMALLINT();
            case "BOOLEAN": return DataTypes.BOOLEAN();
            default: throw new IllegalArgumentException(t);
        }
    }

    /** n values from `distinct` candidates, about 1 in 8 null; JSON text form per value. */
    static List<Object> values(String t, int n, int distinct, Random r) {
        List<Object> cands = new ArrayList<>();
        for (int i = 0; i < distinct; i++) {
            switch (t) {
                case "INT": cands.add(r.nextInt(2000) - 1000 + (i == 0 ? Integer.MIN_VALUE + 1000 : 0)); break;
                case "BIGINT": cands.add(r.nextLong() >> r.nextInt(60)); break;
                case "STRING": {
                    StringBuilder b = new StringBuilder();
                    int len = r.nextInt(12);
                    for (int k = 0; k < len; k++) b.append((char) (r.nextInt(5) == 0 ? 0x4e00 + r.nextInt(50) : 'a' + r.nextInt(26)));
                    cands.add(b.toString());
                    break;
                }
                case "DOUBLE": cands.add(r.nextInt(10) == 0 ? (double) r.nextInt(5) : (r.nextDouble() - 0.5) * Math.pow(10, r.nextInt(12))); break;
                case "DATE": cands.add(r.nextInt(40000) - 10000); break;
                case "TIMESTAMP(3)": cands.add(1_600_000_000_000L + r.nextInt(1_000_000_000) * (r.nextBoolean() ? 1L : -1L)); break;
                case "TIMESTAMP(6)": cands.add(1_600_000_000_000_000L + (r.nextLong() >> 20)); break;
                case "SMALLINT": cands.add((short) (r.nextInt(65536) - 32768)); break;
                case "BOOLEAN": cands.add(i % 2 == 0); break;
                default: throw new IllegalArgumentException(t);
            }
        }
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < n; i++) out.add(r.nextInt(8) == 0 ? null : cands.get(r.nextInt(cands.size())));
        return out;
    }

    static Object internal(String t, Object v) {
        if (v == null) return null;
        switch (t) {
            case "STRING": return BinaryString.fromString((String) v);
            case "TIMESTAMP(3)": return Timestamp.fromEpochMillis((Long) v);
            case "TIMESTAMP(6)": return Timestamp.fromMicros((Long) v);
            default: return v;
        }
    }

    static void emit(String index, String t, Map<String, String> options, List<Object> vals, String name) {
        Options o = new Options();
        options.forEach(o::set);
        FileIndexWriter w = FileIndexer.create(index, type(t), o).createWriter();
        for (Object v : vals) w.writeRecord(internal(t, v));
        byte[] bytes = w.serializedBytes();
        StringBuilder hex = new StringBuilder();
        for (byte b : bytes) hex.append(String.format("%02x", b & 0xff));
        if (!first) OUT.append(",\n");
        first = false;
        OUT.append("{\"case\": ").append(quote(index + " " + t + " " + options + " " + vals.size() + " rows " + name));
        OUT.append(", \"index_type\": ").append(quote(index)).append(", \"type\": ").append(quote(t));
        OUT.append(", \"options\": {");
        boolean f = true;
        for (Map.Entry<String, String> e : options.entrySet()) {
            if (!f) OUT.append(", ");
            f = false;
            OUT.append(quote(e.getKey())).append(": ").append(quote(e.getValue()));
        }
        OUT.append("}, \"values\": [");
        for (int i = 0; i < vals.size(); i++) {
            if (i > 0) OUT.append(", ");
            Object v = vals.get(i);
            if (v == null) OUT.append("null");
            else if (v instanceof String) OUT.append(quote((String) v));
            else if (v instanceof Double) OUT.append(Double.toString((Double) v).replace("E", "e"));
            else OUT.append(v.toString());
        }
        OUT.append("], \"hex\": \"").append(hex).append("\"}");
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
