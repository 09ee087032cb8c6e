"""Every option key of Apache Paimon's ``CoreOptions`` (with its fallback keys).

lakeskip implements a subset (:data:`lakeskip.catalog.options.KNOWN_OPTIONS`). A key listed
here but not implemented is a real Paimon option: ``CREATE``/``ALTER TABLE`` rejects it as "not
supported yet" rather than "unknown", so a user who copied a Paimon DDL knows it is not a typo.

Source: ``paimon-api/src/main/java/org/apache/paimon/CoreOptions.java``, apache/paimon commit
5dacde516bf6e29b583aff8b32bab321bfc6e64f (every ``key("...")`` and ``withFallbackKeys("...")``).

Example:
    >>> "deletion-vectors.enabled" in PAIMON_CORE_OPTIONS, "deletion-vector" in PAIMON_CORE_OPTIONS
    (True, False)
"""

from __future__ import annotations

__all__ = ["PAIMON_CORE_OPTIONS"]

_KEYS = """
add-column-before-partition aggregation.remove-record-on-delete
alter-column-null-to-not-null.disabled async-file-write auto-create batch-scan-mode
blob-as-descriptor blob-compaction.enabled blob-descriptor-field blob-field blob-view-field
blob-view.resolve.enabled blob-write-null-on-fetch-failure blob-write-null-on-missing-file
blob.copy-buffer-size blob.split-by-file-size blob.stored-descriptor-fields
blob.target-file-size branch bucket bucket-append-ordered bucket-function.type bucket-key
cache-page-size chain-table.chain-partition-keys chain-table.enabled
chain-table.split.key-range-enabled chain-table.streaming.merge-snapshot
changelog-file.compression changelog-file.format changelog-file.prefix changelog-file.stats-mode
changelog-producer changelog-producer.lookup-wait changelog-producer.row-deduplicate
changelog-producer.row-deduplicate-ignore-fields changelog.num-retained.max
changelog.num-retained.min changelog.time-retained clustering.columns
clustering.history-partition.idle-to-full-sort clustering.history-partition.limit
clustering.incremental clustering.incremental.mode clustering.incremental.optimize-write
clustering.strategy commit.callbacks commit.discard-duplicate-files commit.force-compact
commit.force-create-snapshot commit.max-retries commit.max-retry-wait commit.min-retry-wait
commit.strict-mode.last-safe-snapshot commit.timeout commit.user-prefix
compaction.delete-ratio-threshold compaction.file-num-limit compaction.force-rewrite-all-files
compaction.force-up-level-0 compaction.incremental-size-threshold
compaction.max-size-amplification-percent compaction.min.file-num compaction.offpeak-ratio
compaction.offpeak.end.hour compaction.offpeak.start.hour compaction.optimization-interval
compaction.size-ratio compaction.skip-expired-partitions compaction.small-file-ratio
compaction.total-size-threshold consumer-id consumer.changelog-only consumer.expiration-time
consumer.ignore-progress consumer.mode continuous.discovery-interval
cross-partition-upsert.bootstrap-parallelism cross-partition-upsert.index-ttl
data-evolution.compaction.rewrite-row-ids data-evolution.enabled
data-evolution.merge-into.file-pruning data-evolution.merge-into.source-persist
data-evolution.reassign.skip-contiguous-row-count
data-evolution.row-id-conflict-rewrite.max-size data-evolution.row-sidecar.enabled
data-evolution.row-sidecar.max-selected-rows data-evolution.row-sidecar.max-selection-ratio
data-file.external-paths data-file.external-paths.specific-fs data-file.external-paths.strategy
data-file.external-paths.weights data-file.path-directory data-file.prefix data-file.thin-mode
delete-file.thread-num delete.force-produce-changelog deletion-vector.index-file.target-size
deletion-vectors.bitmap64 deletion-vectors.enabled deletion-vectors.merge-on-read
deletion-vectors.modifiable disable-explicit-type-casting dynamic-bucket.assigner-parallelism
dynamic-bucket.initial-buckets dynamic-bucket.max-buckets dynamic-bucket.target-row-num
dynamic-partition-overwrite end-input.check-partition-expire file-index.in-manifest-threshold
file-index.read.enabled file-operation.thread-num file-reader-async-threshold file.block-size
file.compression file.compression.per.level file.compression.zstd-level file.format
file.format.per.level file.suffix.include.compression force-lookup
format-table.commit-hive-sync-url format-table.file.compression format-table.implementation
format-table.partition-path-only-value format-table.scan.list-parallelism
full-compaction.delta-commits full-text-index.search-mode global-index.build.max-parallelism
global-index.build.max-shard global-index.column-update-action global-index.enabled
global-index.external-path global-index.row-count-per-shard global-index.search-mode
global-index.thread-num ignore-delete ignore-update-before incremental-between
incremental-between-scan-mode incremental-between-tag-to-snapshot incremental-between-timestamp
incremental-to-auto-tag index-file-in-data-file-dir local-kv-db.block-size
local-merge-buffer-size local-sort.max-num-file-handles log.scan log.scan.timestamp-millis
lookup-compact lookup-compact.max-interval lookup-wait lookup.blob-as-descriptor
lookup.cache-file-retention lookup.cache-max-disk-size lookup.cache-max-memory-size
lookup.cache-rows lookup.cache-spill-compression lookup.cache.bloom.filter.enabled
lookup.cache.bloom.filter.fpp lookup.cache.high-priority-pool-ratio
lookup.continuous.discovery-interval lookup.hash-load-factor lookup.merge-buffer-size
lookup.merge-records-threshold lookup.remote-file.enabled lookup.remote-file.level-threshold
manifest-sort.enabled manifest-sort.max-rewrite-size manifest-sort.partition-field
manifest.compression manifest.delete-file-drop-stats manifest.full-compaction-threshold-size
manifest.merge-min-count manifest.merge-optimize.enabled manifest.target-file-size
materialized-table.definition-query materialized-table.interval-freshness
materialized-table.interval-freshness.time-unit materialized-table.logical-refresh-mode
materialized-table.refresh-handler-bytes materialized-table.refresh-handler-description
materialized-table.refresh-mode materialized-table.refresh-status merge-engine
metadata.stats-dense-store metadata.stats-keep-first-n-columns metadata.stats-mode
metadata.stats-mode.per.level metastore.partitioned-table metastore.tag-to-partition
metastore.tag-to-partition.preview num-levels num-sorted-run.compaction-trigger
num-sorted-run.stop-trigger orc.write.batch-size overwrite-upgrade page-size
parquet.enable.dictionary partial-update.remove-record-on-delete
partial-update.remove-record-on-sequence-group partition partition.default-name
partition.end-input-to-done partition.expiration-batch-size partition.expiration-check-interval
partition.expiration-max-num partition.expiration-strategy partition.expiration-time
partition.idle-time-to-report-statistic partition.legacy-name partition.mark-done-action
partition.mark-done-action.custom.class partition.mark-done-action.http.params
partition.mark-done-action.http.url partition.sink-strategy partition.timestamp-format.strict
partition.timestamp-formatter partition.timestamp-pattern path pk-bitmap.index.columns
pk-btree.index.columns pk-clustering-override pk-full-text.index.columns
pk-multivalue.index.columns pk-vector.index.columns postpone.batch-write-fixed-bucket
postpone.batch-write-fixed-bucket.max-parallelism
postpone.batch-write-fixed-bucket.rescale-load-factor postpone.default-bucket-num
postpone.merge-on-read postpone.target-row-num-per-bucket postpone.target-size-per-bucket
primary-key primary-key.nullable query-auth.enabled read.batch-size record-level.expire-time
record-level.time-field row-tracking.enabled row-tracking.partition-group-on-commit
rowkind.field scalar-index.search-mode scan.bounded.watermark scan.bucket
scan.creation-time-millis scan.fallback-branch scan.fallback-branch.read-fail-fast
scan.fallback-delta-branch scan.fallback-snapshot-branch scan.file-creation-time-millis
scan.ignore-corrupt-files scan.ignore-lost-files scan.manifest.parallelism
scan.max-splits-per-task scan.mode scan.plan-auto-tag-for-read.time-retained
scan.plan-sort-partition scan.primary-branch scan.snapshot-id scan.tag-name scan.timestamp
scan.timestamp-millis scan.version scan.watermark sequence.field sequence.field.sort-order
sequence.snapshot-ordering sink.clustering.by-columns sink.clustering.strategy
sink.process-time-zone sink.watermark-time-zone snapshot.clean-empty-directories
snapshot.expire.clean-empty-directories snapshot.expire.execution-mode snapshot.expire.limit
snapshot.ignore-empty-commit snapshot.num-retained.max snapshot.num-retained.min
snapshot.time-retained snapshot.watermark-idle-timeout
sort-compaction.local-sample.magnification sort-compaction.range-strategy sort-engine
sort-spill-buffer-size sort-spill-threshold source.split.open-file-cost source.split.target-size
spill-compression spill-compression.zstd-level stream-scan-mode streaming-read-append-overwrite
streaming-read-overwrite streaming.read.snapshot.delay table-read.sequence-number.enabled
tag.automatic-completion tag.automatic-creation tag.batch.customized-name tag.callbacks
tag.create-success-file tag.creation-delay tag.creation-period tag.creation-period-duration
tag.default-time-retained tag.num-retained-max tag.period-formatter tag.time-expire-enabled
target-file-row-num target-file-size type vector-field vector-index.search-mode
vector-search.distribute.enabled vector-search.lateral-join.batch-size vector.file.format
vector.target-file-size visibility-callback.check-interval visibility-callback.enabled
visibility-callback.timeout write-buffer-for-append write-buffer-size
write-buffer-spill.max-disk-size write-buffer-spillable write-max-writers-to-spill write-only
write.batch-memory write.batch-size write.compaction-skip write.sequence-number-init-mode
zorder.var-length-contribution
"""

PAIMON_CORE_OPTIONS: frozenset[str] = frozenset(_KEYS.split())
