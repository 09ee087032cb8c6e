import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaManager;
import org.apache.paimon.schema.TableSchema;
import org.apache.paimon.table.sink.FixedBucketRowKeyExtractor;
import org.apache.paimon.table.sink.KeyAndBucketExtractor;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;

import java.io.File;
import java.io.PrintWriter;
import java.lang.reflect.Method;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.*;

/**
 * Buckets of rows of bucketed append tables as Paimon 0.9.0 assigns them: a table schema made
 * by SchemaManager ('bucket' = N, 'bucket-key' = ...), FixedBucketRowKeyExtractor.setRecord(row)
 * then bucket(); the hash is KeyAndBucketExtractor.bucketKeyHashCode of the projected key row.
 * Usage: java -cp classes:paimon-python-java-bridge-0.9.0.jar GenBuckets out.json workdir
 */
public class GenBuckets {
    static final Random RND = new Random(20261123L);
    static final String[] STRS = {"", "a", "ab", "abcdefg", "abcdefgh", "hello world, longer",
        "caf\u00e9", "\u5217", "\ud83d\ude00x", "0", "null", "the quick brown fox jumps over"};

    static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static DataType type(String t) {
        switch (t) {
            case "BOOLEAN": return DataTypes.BOOLEAN();
            case "TINYINT": return DataTypes.TINYINT();
            case "SMALLINT": return DataTypes.SMALLINT();
            case "INT": return DataTypes.INT();
            case "BIGINT": return DataTypes.BIGINT();
            case "STRING": return DataTypes.STRING();
            case "DATE": return DataTypes.DATE();
            case "DECIMAL(10,2)": return DataTypes.DECIMAL(10, 2);
            case "DECIMAL(38,4)": return DataTypes.DECIMAL(38, 4);
            case "TIMESTAMP(3)": return DataTypes.TIMESTAMP(3);
            case "TIMESTAMP(6)": return DataTypes.TIMESTAMP(6);
            default: throw new IllegalArgumentException(t);
        }
    }

    /** A random value as (Paimon internal object, JSON text); null 1 in 8. */
    static Object[] value(String t) {
        if (RND.nextInt(8) == 0) return new Object[] {null, "null"};
        switch (t) {
            case "BOOLEAN": { boolean b = RND.nextBoolean(); return new Object[] {b, "" + b}; }
            case "TINYINT": { byte b = (byte) RND.nextInt(); return new Object[] {b, "" + b}; }
            case "SMALLINT": { short s = (short) RND.nextInt(); return new Object[] {s, "" + s}; }
            case "INT": {
                int[] edge = {0, 1, -1, Integer.MAX_VALUE, Integer.MIN_VALUE, 7, 42};
                int v = RND.nextBoolean() ? edge[RND.nextInt(edge.length)] : RND.nextInt();
                return new Object[] {v, "" + v};
            }
            case "BIGINT": {
                long[] edge = {0L, 1L, -1L, Long.MAX_VALUE, Long.MIN_VALUE, 1L << 40};
                long v = RND.nextBoolean() ? edge[RND.nextInt(edge.length)] : RND.nextLong();
                return new Object[] {v, "" + v};
            }
            case "STRING": {
                String s = RND.nextBoolean() ? STRS[RND.nextInt(STRS.length)] : "k" + RND.nextInt(100000);
                return new Object[] {BinaryString.fromString(s), q(s)};
            }
            case "DATE": { int d = RND.nextInt(40000) - 10000; return new Object[] {d, "" + d}; }
            case "DECIMAL(10,2)": {
                BigDecimal d = new BigDecimal(BigInteger.valueOf(RND.nextLong() % 10000000000L), 2);
                return new Object[] {Decimal.fromBigDecimal(d, 10, 2), q(d.toPlainString())};
            }
            case "DECIMAL(38,4)": {
                BigDecimal d = new BigDecimal(new BigInteger(120, RND).subtract(BigInteger.ONE.shiftLeft(119)), 4);
                return new Object[] {Decimal.fromBigDecimal(d, 38, 4), q(d.toPlainString())};
            }
            case "TIMESTAMP(3)": {
                long ms = RND.nextLong() % 4000000000000L;
                return new Object[] {Timestamp.fromEpochMillis(ms), "" + (ms * 1000)};
            }
            case "TIMESTAMP(6)": {
                long us = RND.nextLong() % 4000000000000000L;
                long ms = Math.floorDiv(us, 1000L);
                int nanos = (int) Math.floorMod(us, 1000L) * 1000;
                return new Object[] {Timestamp.fromEpochMillis(ms, nanos), "" + us};
            }
            default: throw new IllegalArgumentException(t);
        }
    }

    public static void main(String[] args) throws Exception {
        // name, bucket count, columns (name:type), bucket-key, rows
        Object[][] cases = {
            {"int", 8, new String[] {"a:INT", "v:STRING"}, "a", 60},
            {"bigint", 5, new String[] {"a:BIGINT"}, "a", 40},
            {"string", 8, new String[] {"s:STRING", "x:INT"}, "s", 60},
            {"date", 3, new String[] {"d:DATE"}, "d", 30},
            {"decimal_compact", 7, new String[] {"m:DECIMAL(10,2)"}, "m", 30},
            {"decimal_wide", 7, new String[] {"m:DECIMAL(38,4)"}, "m", 30},
            {"small_types", 4, new String[] {"b:BOOLEAN", "t:TINYINT", "s:SMALLINT"}, "b,t,s", 30},
            {"timestamps", 6, new String[] {"t3:TIMESTAMP(3)", "t6:TIMESTAMP(6)"}, "t3,t6", 30},
            {"int_string", 8, new String[] {"v:INT", "a:INT", "s:STRING"}, "a,s", 50},
            {"reordered_key", 16, new String[] {"s:STRING", "d:DATE", "a:BIGINT"}, "a,d,s", 50},
            {"one_bucket", 1, new String[] {"a:INT"}, "a", 5},
        };
        Method bucketKey = FixedBucketRowKeyExtractor.class.getDeclaredMethod("bucketKey");
        bucketKey.setAccessible(true);
        StringBuilder out = new StringBuilder("{\"paimon\": \"0.9.0\", \"cases\": [\n");
        for (int c = 0; c < cases.length; c++) {
            String name = (String) cases[c][0];
            int buckets = (Integer) cases[c][1];
            String[] cols = (String[]) cases[c][2];
            String key = (String) cases[c][3];
            int n = (Integer) cases[c][4];
            Schema.Builder sb = Schema.newBuilder();
            for (String col : cols) sb.column(col.split(":")[0], type(col.split(":", 2)[1]));
            sb.option("bucket", "" + buckets).option("bucket-key", key);
            File dir = new File(args[1], name);
            TableSchema ts = new SchemaManager(LocalFileIO.create(), new Path(dir.toString())).createTable(sb.build());
            FixedBucketRowKeyExtractor ex = new FixedBucketRowKeyExtractor(ts);
            out.append(c == 0 ? "" : ",\n").append("{\"name\": ").append(q(name));
            out.append(", \"buckets\": ").append(buckets).append(", \"bucket_key\": ").append(q(key));
            out.append(", \"columns\": [");
            for (int i = 0; i < cols.length; i++) {
                out.append(i == 0 ? "" : ", ").append("[").append(q(cols[i].split(":")[0])).append(", ").append(q(cols[i].split(":", 2)[1])).append("]");
            }
            out.append("], \"rows\": [\n");
            for (int r = 0; r < n; r++) {
                GenericRow row = new GenericRow(cols.length);
                StringBuilder vals = new StringBuilder();
                for (int i = 0; i < cols.length; i++) {
                    Object[] v = value(cols[i].split(":", 2)[1]);
                    row.setField(i, v[0]);
                    vals.append(i == 0 ? "" : ", ").append(v[1]);
                }
                ex.setRecord(row);
                int bucket = ex.bucket();
                int hash = KeyAndBucketExtractor.bucketKeyHashCode((BinaryRow) bucketKey.invoke(ex));
                out.append(r == 0 ? "" : ",\n").append("  {\"values\": [").append(vals);
                out.append("], \"hash\": ").append(hash).append(", \"bucket\": ").append(bucket).append("}");
            }
            out.append("]}");
        }
        out.append("\n]}\n");
        try (PrintWriter w = new PrintWriter(args[0], "UTF-8")) { w.print(out); }
    }
}
