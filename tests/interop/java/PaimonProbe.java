/*
 * Drives Apache Paimon's Java classes for lakeskip's interop tests (tests/interop/). The same
 * source compiles against Paimon 0.9.0 and 2.0.0 (the two API differences go through reflection).
 *
 * Reads one JSON request from stdin: {"warehouse": "/abs/path", "ops": [op, ...]} and prints one
 * JSON array, a result per op. Ops:
 *   {"op": "create", "table": "db.t", "fields": [["id", "BIGINT"], ...], "partition": [...],
 *    "options": {...}}
 *   {"op": "write", "table": "db.t", "rows": [[v, ...], ...], "overwrite": null | {"k": "v"}}
 *      (a ROW value is a JSON array of its field values, an ARRAY value a JSON array)
 *   {"op": "read", "table": "db.t", "queries": [predicate, ...], "tag": optional tag name}
 *      -> {"snapshot": id, "rows": [[text | null, ...]], "results": [{"plan": [file, ...],
 *          "kept": [file, ...]}]}: "plan" is what the scan planned (stats + embedded indexes),
 *          "kept" the planned files whose read returned rows (the reader also applies `.index`
 *          files and Parquet row-group stats; rows are not filtered one by one).
 *      predicate: {"and": [p, ...]} | {"or": [p, ...]} |
 *                 {"op": "eq|ne|lt|le|gt|ge|in|notin|isnull|isnotnull", "col": c, "values": [...]}
 *   {"op": "read_filtered", "table": "db.t", "query": predicate} -> the rows Paimon reads with
 *                 the filter (its kept files and row groups; rows are not filtered one by one)
 *   {"op": "files", "table": "db.t"} -> [{"file", "bucket", "extra", "embedded" (hex), "level",
 *      "dv" (the name of the deletion-vector index file that covers the file, or null)}]
 *   {"op": "compact", "table": "db.t", "full": true} -> number of (partition, bucket) compacted:
 *      Paimon's BatchTableWrite.compact on every planned bucket, committed once
 * A write op may carry "kinds": ["+I" | "-U" | "+U" | "-D", ...], one per row (primary-key tables).
 *   {"op": "expire", "table": "db.t", "retain": n} -> number of expired snapshots
 *   {"op": "system", "table": "db.t$snapshots", "options": {...} optional (time travel),
 *    "zone": "UTC" optional (the JVM's default zone, which Paimon renders commit times in)}
 *      -> {"fields": [name, ...], "rows": [[text | null, ...]]}: a system table as Paimon reads it
 *   {"op": "dv", "positions": [n, ...]} -> hex of Paimon's BitmapDeletionVector bytes
 *      (magic + RoaringBitmap32, as inside a deletion-vector index file block)
 * Any other op goes to PaimonNewestOps (compiled beside this class against the newest release
 * only: ops whose API 0.9 lacks).
 *
 * Values are JSON numbers/strings in Paimon's internal form (DATE = epoch day). Read rows come
 * back as text: numbers as Java's toString, strings as is, null as null; a ROW as {a,b}, an
 * ARRAY as [a,b], a MAP as {k=v,k=v} with its entries' texts sorted (nested values alike, a
 * nested null as "null"); a MAP value is written from a JSON array of [key, value] pairs. A
 * create op's field type is a simple name or Paimon's schema-file JSON for the type (ROW /
 * ARRAY / MAP objects).
 */

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeRoot;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowType;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

public class PaimonProbe {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        JsonNode request = JSON.readTree(System.in);
        Options o = new Options();
        o.set("warehouse", "file://" + request.get("warehouse").asText());
        ArrayNode out = JSON.createArrayNode();
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(o))) {
            for (JsonNode op : request.get("ops")) {
                out.add(run(catalog, op));
            }
        }
        System.out.println(JSON.writeValueAsString(out));
    }

    static JsonNode run(Catalog catalog, JsonNode op) throws Exception {
        if (op.get("op").asText().equals("dv")) {
            // Paimon's own bytes of a 32-bit deletion vector (magic + RoaringBitmap32)
            org.apache.paimon.deletionvectors.BitmapDeletionVector dv =
                    new org.apache.paimon.deletionvectors.BitmapDeletionVector();
            for (JsonNode p : op.get("positions")) {
                dv.delete(p.asLong());
            }
            return JSON.valueToTree(hex(dvBytes(dv)));
        }
        String name = op.get("table").asText();
        Identifier id = Identifier.fromString(name);
        switch (op.get("op").asText()) {
            case "create":
                return create(catalog, id, op);
            case "write":
                return write(table(catalog, id), op);
            case "read":
                FileStoreTable readTable = table(catalog, id);
                if (op.has("tag")) {
                    // read a tag, as Spark's VERSION AS OF '<tag>' does in Paimon
                    readTable = readTable.copy(
                            Collections.singletonMap("scan.tag-name", op.get("tag").asText()));
                }
                return read(readTable, op);
            case "read_filtered":
                return readFiltered(table(catalog, id), op);
            case "files":
                return files(table(catalog, id));
            case "compact":
                return compact(table(catalog, id), op);
            case "system":
                return system(catalog, id, op);
            case "expire":
                return JSON.valueToTree(
                        table(catalog, id)
                                .newExpireSnapshots()
                                .config(
                                        ExpireConfig.builder()
                                                .snapshotRetainMax(op.get("retain").asInt())
                                                .snapshotRetainMin(1)
                                                .snapshotTimeRetain(Duration.ZERO)
                                                .build())
                                .expire());
            default:
                // ops of the newest release only (PaimonNewestOps.java)
                return (JsonNode)
                        Class.forName("PaimonNewestOps")
                                .getMethod("run", Catalog.class, JsonNode.class)
                                .invoke(null, catalog, op);
        }
    }

    static FileStoreTable table(Catalog catalog, Identifier id) throws Exception {
        Table t = catalog.getTable(id);
        // one manifest reader thread: Paimon 0.9's AppendOnlyFileStoreScan.testFileIndex
        // shares a HashMap across threads (fixed in 1.2), which can throw
        // ConcurrentModificationException on tables with .index files
        return ((FileStoreTable) t).copy(Collections.singletonMap("scan.manifest.parallelism", "1"));
    }

    static DataType type(String text) {
        switch (text) {
            case "BIGINT": return DataTypes.BIGINT();
            case "INT": return DataTypes.INT();
            case "STRING": return DataTypes.STRING();
            case "DOUBLE": return DataTypes.DOUBLE();
            case "DATE": return DataTypes.DATE();
            default: throw new IllegalArgumentException("type " + text);
        }
    }

    static JsonNode create(Catalog catalog, Identifier id, JsonNode op) throws Exception {
        catalog.createDatabase(id.getDatabaseName(), true);
        Schema.Builder b = Schema.newBuilder();
        for (JsonNode f : op.get("fields")) {
            // a type is a simple name, or Paimon's schema-file JSON (ROW / ARRAY / MAP objects);
            // Schema.Builder.column numbers nested ROW fields itself (ReassignFieldId)
            JsonNode tn = f.get(1);
            b.column(
                    f.get(0).asText(),
                    tn.isObject()
                            ? org.apache.paimon.types.DataTypeJsonParser.parseDataType(tn)
                            : type(tn.asText()));
        }
        List<String> parts = new ArrayList<>();
        if (op.has("partition")) op.get("partition").forEach(p -> parts.add(p.asText()));
        b.partitionKeys(parts);
        Iterator<Map.Entry<String, JsonNode>> it = op.get("options").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            b.option(e.getKey(), e.getValue().asText());
        }
        catalog.createTable(id, b.build(), false);
        return JSON.valueToTree(true);
    }

    static Object value(DataType t, JsonNode v) {
        if (v == null || v.isNull()) return null;
        switch (t.getTypeRoot()) {
            case BIGINT: return v.asLong();
            case INTEGER:
            case DATE: return v.asInt();
            case DOUBLE: return v.asDouble();
            case VARCHAR: return BinaryString.fromString(v.asText());
            case ROW: {
                RowType rt = (RowType) t;
                Object[] vals = new Object[rt.getFieldCount()];
                for (int i = 0; i < vals.length; i++) vals[i] = value(rt.getTypeAt(i), v.get(i));
                return GenericRow.of(vals);
            }
            case ARRAY: {
                DataType e = ((org.apache.paimon.types.ArrayType) t).getElementType();
                Object[] vals = new Object[v.size()];
                for (int i = 0; i < vals.length; i++) vals[i] = value(e, v.get(i));
                return new org.apache.paimon.data.GenericArray(vals);
            }
            case MAP: {
                org.apache.paimon.types.MapType mt = (org.apache.paimon.types.MapType) t;
                Map<Object, Object> m = new LinkedHashMap<>();
                for (JsonNode kv : v) {
                    m.put(value(mt.getKeyType(), kv.get(0)), value(mt.getValueType(), kv.get(1)));
                }
                return new org.apache.paimon.data.GenericMap(m);
            }
            default: throw new IllegalArgumentException("value of " + t);
        }
    }

    static JsonNode write(FileStoreTable t, JsonNode op) throws Exception {
        RowType rt = t.rowType();
        BatchWriteBuilder wb = t.newBatchWriteBuilder();
        JsonNode ow = op.get("overwrite");
        if (ow != null && !ow.isNull()) {
            Map<String, String> part = new HashMap<>();
            ow.fields().forEachRemaining(e -> part.put(e.getKey(), e.getValue().asText()));
            wb = wb.withOverwrite(part);
        }
        // dynamic bucket (bucket = -1 with a primary key): Paimon's own assigner over the
        // table's HASH index, one channel, as a single-writer job does
        boolean dynamic =
                t.bucketMode() == org.apache.paimon.table.BucketMode.HASH_DYNAMIC;
        org.apache.paimon.index.HashBucketAssigner assigner = dynamic ? hashAssigner(t) : null;
        org.apache.paimon.table.sink.RowPartitionKeyExtractor keys =
                dynamic ? new org.apache.paimon.table.sink.RowPartitionKeyExtractor(t.schema()) : null;
        try (BatchTableWrite w = wb.newWrite(); BatchTableCommit c = wb.newCommit()) {
            // a spill/lookup directory: deletion-vector tables look keys up while compacting
            w.withIOManager(org.apache.paimon.disk.IOManager.create(System.getProperty("java.io.tmpdir")));
            JsonNode kinds = op.get("kinds");
            int n = 0;
            for (JsonNode row : op.get("rows")) {
                Object[] vals = new Object[rt.getFieldCount()];
                for (int i = 0; i < vals.length; i++) vals[i] = value(rt.getTypeAt(i), row.get(i));
                GenericRow r = GenericRow.of(vals);
                if (kinds != null && !kinds.isNull()) {
                    r.setRowKind(org.apache.paimon.types.RowKind.fromShortString(kinds.get(n).asText()));
                }
                n++;
                if (dynamic) {
                    w.write(r, assigner.assign(keys.partition(r), keys.trimmedPrimaryKey(r).hashCode()));
                } else {
                    w.write(r);
                }
            }
            c.commit(w.prepareCommit());
        }
        return JSON.valueToTree(true);
    }

    /** A full (or minor) compaction of every planned (partition, bucket), committed once. */
    static JsonNode compact(FileStoreTable t, JsonNode op) throws Exception {
        boolean full = !op.has("full") || op.get("full").asBoolean();
        Map<String, Object[]> targets = new LinkedHashMap<>();
        for (Split s : t.newReadBuilder().newScan().plan().splits()) {
            DataSplit ds = (DataSplit) s;
            targets.put(ds.partition().toString() + "/" + ds.bucket(), new Object[] {ds.partition(), ds.bucket()});
        }
        BatchWriteBuilder wb = t.newBatchWriteBuilder();
        try (BatchTableWrite w = wb.newWrite(); BatchTableCommit c = wb.newCommit()) {
            // a spill/lookup directory: deletion-vector tables look keys up while compacting
            w.withIOManager(org.apache.paimon.disk.IOManager.create(System.getProperty("java.io.tmpdir")));
            for (Object[] pb : targets.values()) {
                w.compact((org.apache.paimon.data.BinaryRow) pb[0], (Integer) pb[1], full);
            }
            c.commit(w.prepareCommit());
        }
        return JSON.valueToTree(targets.size());
    }

    /** Paimon's HashBucketAssigner for one channel (its constructor grew maxBucketsNum in 1.x). */
    static org.apache.paimon.index.HashBucketAssigner hashAssigner(FileStoreTable t) throws Exception {
        for (java.lang.reflect.Constructor<?> k :
                org.apache.paimon.index.HashBucketAssigner.class.getConstructors()) {
            Object[] args = {
                t.snapshotManager(),
                java.util.UUID.randomUUID().toString(),
                t.store().newIndexFileHandler(),
                1,
                1,
                0,
                t.coreOptions().dynamicBucketTargetRowNum(),
                -1 // maxBucketsNum: Paimon's default, unbounded
            };
            if (k.getParameterCount() == 7 || k.getParameterCount() == 8) {
                return (org.apache.paimon.index.HashBucketAssigner)
                        k.newInstance(java.util.Arrays.copyOf(args, k.getParameterCount()));
            }
        }
        throw new IllegalStateException("no known HashBucketAssigner constructor");
    }

    /** Magic + RoaringBitmap32 of a deletion vector: 0.9's serializeToBytes(), or 1.x's
     * serializeTo(out) without its size prefix and checksum suffix. */
    static byte[] dvBytes(org.apache.paimon.deletionvectors.BitmapDeletionVector dv) throws Exception {
        try {
            return (byte[]) dv.getClass().getMethod("serializeToBytes").invoke(dv);
        } catch (NoSuchMethodException e) {
            java.io.ByteArrayOutputStream bos = new java.io.ByteArrayOutputStream();
            dv.getClass()
                    .getMethod("serializeTo", java.io.DataOutputStream.class)
                    .invoke(dv, new java.io.DataOutputStream(bos));
            byte[] framed = bos.toByteArray();
            return java.util.Arrays.copyOfRange(framed, 4, framed.length - 4);
        }
    }

    static String hex(byte[] bytes) {
        StringBuilder hex = new StringBuilder();
        for (byte b : bytes) hex.append(String.format("%02x", b & 0xff));
        return hex.toString();
    }

    static Predicate predicate(RowType rt, JsonNode p) {
        PredicateBuilder pb = new PredicateBuilder(rt);
        if (p.has("and") || p.has("or")) {
            List<Predicate> kids = new ArrayList<>();
            for (JsonNode k : p.has("and") ? p.get("and") : p.get("or")) kids.add(predicate(rt, k));
            return p.has("and") ? PredicateBuilder.and(kids) : PredicateBuilder.or(kids);
        }
        int i = rt.getFieldIndex(p.get("col").asText());
        DataType t = rt.getTypeAt(i);
        List<Object> vs = new ArrayList<>();
        if (p.has("values")) for (JsonNode v : p.get("values")) vs.add(value(t, v));
        switch (p.get("op").asText()) {
            case "eq": return pb.equal(i, vs.get(0));
            case "ne": return pb.notEqual(i, vs.get(0));
            case "lt": return pb.lessThan(i, vs.get(0));
            case "le": return pb.lessOrEqual(i, vs.get(0));
            case "gt": return pb.greaterThan(i, vs.get(0));
            case "ge": return pb.greaterOrEqual(i, vs.get(0));
            case "in": return pb.in(i, vs);
            case "notin": return pb.notIn(i, vs);
            case "isnull": return pb.isNull(i);
            case "isnotnull": return pb.isNotNull(i);
            default: throw new IllegalArgumentException("predicate " + p);
        }
    }

    static List<List<String>> rows(ReadBuilder rb, List<Split> splits) throws Exception {
        RowType rt = rb.readType();
        List<InternalRow.FieldGetter> getters = new ArrayList<>();
        for (int i = 0; i < rt.getFieldCount(); i++) {
            getters.add(InternalRow.createFieldGetter(rt.getTypeAt(i), i));
        }
        List<List<String>> out = new ArrayList<>();
        try (RecordReader<InternalRow> r = rb.newRead().createReader(splits)) {
            r.forEachRemaining(
                    row -> {
                        List<String> vals = new ArrayList<>();
                        for (int i = 0; i < getters.size(); i++) {
                            Object v = getters.get(i).getFieldOrNull(row);
                            vals.add(v == null ? null : text(rt.getTypeAt(i), v));
                        }
                        out.add(vals);
                    });
        }
        return out;
    }

    /** A value as text; a ROW as {a,b} and an ARRAY as [a,b], nested values alike, null as null. */
    static String text(DataType t, Object v) {
        if (v == null) return "null";
        if (t instanceof RowType) {
            RowType rt = (RowType) t;
            InternalRow r = (InternalRow) v;
            List<String> parts = new ArrayList<>();
            for (int i = 0; i < rt.getFieldCount(); i++) {
                parts.add(text(rt.getTypeAt(i), InternalRow.createFieldGetter(rt.getTypeAt(i), i).getFieldOrNull(r)));
            }
            return "{" + String.join(",", parts) + "}";
        }
        if (t instanceof org.apache.paimon.types.ArrayType) {
            DataType e = ((org.apache.paimon.types.ArrayType) t).getElementType();
            org.apache.paimon.data.InternalArray a = (org.apache.paimon.data.InternalArray) v;
            org.apache.paimon.data.InternalArray.ElementGetter g = org.apache.paimon.data.InternalArray.createElementGetter(e);
            List<String> parts = new ArrayList<>();
            for (int i = 0; i < a.size(); i++) parts.add(text(e, g.getElementOrNull(a, i)));
            return "[" + String.join(",", parts) + "]";
        }
        if (t instanceof org.apache.paimon.types.MapType) {
            org.apache.paimon.types.MapType mt = (org.apache.paimon.types.MapType) t;
            org.apache.paimon.data.InternalMap m = (org.apache.paimon.data.InternalMap) v;
            org.apache.paimon.data.InternalArray.ElementGetter kg =
                    org.apache.paimon.data.InternalArray.createElementGetter(mt.getKeyType());
            org.apache.paimon.data.InternalArray.ElementGetter vg =
                    org.apache.paimon.data.InternalArray.createElementGetter(mt.getValueType());
            List<String> parts = new ArrayList<>();
            for (int i = 0; i < m.size(); i++) {
                parts.add(text(mt.getKeyType(), kg.getElementOrNull(m.keyArray(), i)) + "="
                        + text(mt.getValueType(), vg.getElementOrNull(m.valueArray(), i)));
            }
            Collections.sort(parts); // a map's order is no part of its value (pyspark's dicts)
            return "{" + String.join(",", parts) + "}";
        }
        return v.toString();
    }

    static JsonNode system(Catalog catalog, Identifier id, JsonNode op) throws Exception {
        if (op.has("zone")) {
            java.util.TimeZone.setDefault(java.util.TimeZone.getTimeZone(op.get("zone").asText()));
        }
        Table t = catalog.getTable(id);
        if (op.has("options")) {
            Map<String, String> dynamic = new HashMap<>();
            op.get("options").fields().forEachRemaining(e -> dynamic.put(e.getKey(), e.getValue().asText()));
            t = t.copy(dynamic);
        }
        ReadBuilder rb = t.newReadBuilder();
        ObjectNode out = JSON.createObjectNode();
        ArrayNode fields = out.putArray("fields");
        for (DataField f : rb.readType().getFields()) {
            fields.add(f.name());
        }
        out.set("rows", JSON.valueToTree(rows(rb, rb.newScan().plan().splits())));
        return out;
    }

    static JsonNode read(FileStoreTable t, JsonNode op) throws Exception {
        ObjectNode res = JSON.createObjectNode();
        ReadBuilder all = t.newReadBuilder();
        List<Split> splits = all.newScan().plan().splits();
        res.set("rows", JSON.valueToTree(rows(all, splits)));
        res.put("snapshot", t.snapshotManager().latestSnapshotId());
        ArrayNode results = res.putArray("results");
        for (JsonNode q : op.get("queries")) {
            ReadBuilder rb = t.newReadBuilder().withFilter(predicate(t.rowType(), q));
            TreeSet<String> plan = new TreeSet<>(), kept = new TreeSet<>();
            for (Split s : rb.newScan().plan().splits()) {
                DataSplit ds = (DataSplit) s;
                for (DataFileMeta f : ds.dataFiles()) {
                    plan.add(f.fileName());
                    DataSplit one =
                            DataSplit.builder()
                                    .withSnapshot(ds.snapshotId())
                                    .withPartition(ds.partition())
                                    .withBucket(ds.bucket())
                                    .withBucketPath(ds.bucketPath())
                                    .withDataFiles(Collections.singletonList(f))
                                    .rawConvertible(ds.rawConvertible())
                                    .build();
                    if (!rows(rb, Collections.singletonList(one)).isEmpty()) kept.add(f.fileName());
                }
            }
            ObjectNode r = results.addObject();
            r.set("plan", JSON.valueToTree(plan));
            r.set("kept", JSON.valueToTree(kept));
        }
        return res;
    }

    static JsonNode readFiltered(FileStoreTable t, JsonNode op) throws Exception {
        ReadBuilder rb = t.newReadBuilder().withFilter(predicate(t.rowType(), op.get("query")));
        return JSON.valueToTree(rows(rb, rb.newScan().plan().splits()));
    }

    static JsonNode files(FileStoreTable t) throws Exception {
        ArrayNode out = JSON.createArrayNode();
        for (Split s : t.newReadBuilder().newScan().plan().splits()) {
            DataSplit ds = (DataSplit) s;
            List<org.apache.paimon.table.source.DeletionFile> dvs =
                    ds.deletionFiles().orElse(Collections.emptyList());
            for (int k = 0; k < ds.dataFiles().size(); k++) {
                DataFileMeta f = ds.dataFiles().get(k);
                org.apache.paimon.table.source.DeletionFile dvf = k < dvs.size() ? dvs.get(k) : null;
                ObjectNode n = out.addObject();
                n.put("file", f.fileName());
                n.put("bucket_path", ds.bucketPath());
                n.put("bucket", ds.bucket());
                n.set("extra", JSON.valueToTree(f.extraFiles()));
                byte[] e = f.embeddedIndex();
                StringBuilder hex = new StringBuilder();
                if (e != null) for (byte x : e) hex.append(String.format("%02x", x & 0xff));
                n.put("embedded", e == null ? null : hex.toString());
                n.put("level", f.level());
                n.put("dv", dvf == null ? null : new org.apache.paimon.fs.Path(dvf.path()).getName());
            }
        }
        return out;
    }
}
