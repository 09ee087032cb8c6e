/*
 * Ops of PaimonProbe that only the newest Paimon release (2.0.0) has an API for; compiled beside
 * PaimonProbe.java against that release only (tests/interop/conftest.py), reached from
 * PaimonProbe.run for an op name it does not know.
 *
 *   {"op": "delete_positions", "table": "db.t", "deletes": {"<data file name>": [pos, ...]}}
 *      -> number of data files given deletion vectors: Paimon's own deletion vectors of an
 *      append table with 'deletion-vectors.enabled' (as its Spark DELETE writes them,
 *      PaimonSparkWriter.persistDeletionVectors): per (partition, bucket) of the files named,
 *      BaseAppendDeleteFileMaintainer (unaware or bucketed) merges the new positions with the
 *      file's old vector and writes the index file; one commit.
 */

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.deletionvectors.BitmapDeletionVector;
import org.apache.paimon.deletionvectors.append.BaseAppendDeleteFileMaintainer;
import org.apache.paimon.index.IndexFileHandler;
import org.apache.paimon.index.IndexFileMeta;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.manifest.FileKind;
import org.apache.paimon.manifest.IndexManifestEntry;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class PaimonNewestOps {
    static final ObjectMapper JSON = new ObjectMapper();

    public static JsonNode run(Catalog catalog, JsonNode op) throws Exception {
        switch (op.get("op").asText()) {
            case "delete_positions":
                return deletePositions(
                        (FileStoreTable) catalog.getTable(Identifier.fromString(op.get("table").asText())),
                        op.get("deletes"));
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    static JsonNode deletePositions(FileStoreTable t, JsonNode deletes) throws Exception {
        // the (partition, bucket) of every data file named, from the latest snapshot's plan
        Map<String, Object[]> groups = new LinkedHashMap<>();
        Map<String, List<String>> filesOf = new LinkedHashMap<>();
        for (Split s : t.newReadBuilder().newScan().plan().splits()) {
            DataSplit ds = (DataSplit) s;
            for (DataFileMeta f : ds.dataFiles()) {
                if (!deletes.has(f.fileName())) continue;
                String key = ds.partition().toString() + "/" + ds.bucket();
                groups.putIfAbsent(key, new Object[] {ds.partition(), ds.bucket()});
                filesOf.computeIfAbsent(key, k -> new ArrayList<>()).add(f.fileName());
            }
        }
        int named = 0;
        for (List<String> fs : filesOf.values()) named += fs.size();
        if (named != deletes.size()) {
            throw new IllegalArgumentException("files not in the latest snapshot: " + deletes);
        }
        boolean unaware = t.bucketMode() == BucketMode.BUCKET_UNAWARE;
        IndexFileHandler handler = t.store().newIndexFileHandler();
        List<CommitMessage> messages = new ArrayList<>();
        for (Map.Entry<String, Object[]> g : groups.entrySet()) {
            BinaryRow partition = (BinaryRow) g.getValue()[0];
            int bucket = (Integer) g.getValue()[1];
            BaseAppendDeleteFileMaintainer m =
                    unaware
                            ? BaseAppendDeleteFileMaintainer.forUnawareAppend(
                                    handler, t.latestSnapshot().get(), partition)
                            : BaseAppendDeleteFileMaintainer.forBucketedAppend(
                                    handler, t.latestSnapshot().get(), partition, bucket);
            for (String file : filesOf.get(g.getKey())) {
                BitmapDeletionVector dv = new BitmapDeletionVector();
                for (JsonNode p : deletes.get(file)) dv.delete(p.asLong());
                m.notifyNewDeletionVector(file, dv);
            }
            List<IndexFileMeta> added = new ArrayList<>(), removed = new ArrayList<>();
            for (IndexManifestEntry e : m.persist()) {
                (e.kind() == FileKind.ADD ? added : removed).add(e.indexFile());
            }
            messages.add(
                    new CommitMessageImpl(
                            m.getPartition(),
                            m.getBucket(),
                            null,
                            new DataIncrement(
                                    Collections.emptyList(),
                                    Collections.emptyList(),
                                    Collections.emptyList(),
                                    added,
                                    removed),
                            CompactIncrement.emptyIncrement()));
        }
        try (BatchTableCommit c = t.newBatchWriteBuilder().newCommit()) {
            c.commit(messages);
        }
        return JSON.valueToTree(named);
    }
}
