"""Compaction of a primary-key table's buckets: full (Paimon's ``pickFullCompaction``) or the
runs universal compaction picks (:mod:`lakeskip.catalog.write.universal`).

:func:`plan_universal_tasks` gives one task per (partition, bucket) with something to do. A
full compaction merges every run of the bucket into one at the top level (``num-levels`` -
1); a bucket that is one top-level run already is left alone, but for its files with DVs,
each rewritten on its own. A task (:func:`compact_bucket`) keeps the newest version of each
key (largest ``_SEQUENCE_NUMBER``, after the engine's sequence fields) and drops keys whose
newest version is ``-U``/``-D`` when nothing older lies below its output level, and writes
the survivors sorted by key -- rolled at ``target-file-size`` into non-overlapping files --
with their own sequence numbers and kinds (a version written concurrently at level 0 still
sorts after them). The driver commits one COMPACT snapshot that deletes the compacted files;
the commit fails with ``CommitConflictError`` if one was removed meanwhile.

With deletion vectors the files are read minus their DVs (a DELETE there is only a DV mark)
and the commit drops the DVs, failing if one changed meanwhile.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.kind import PkRaw, merge_engine_of, schema_kind
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.pk.primary_key import (
    SEQUENCE_NUMBER,
    TOP_LEVEL,
    VALUE_KIND,
    schema_key_layout,
)
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.bucket_lookup import BucketFile, iter_versions, sorted_runs
from lakeskip.catalog.write.rolling_writer import RollingWriter
from lakeskip.catalog.write.sort_buffer import BufferOptions, merge_sorted
from lakeskip.catalog.write.write_spec import WriteSpec

__all__ = [
    "TOP_LEVEL",
    "BucketTask",
    "compact_bucket",
    "plan_universal_tasks",
]


@dataclass(frozen=True, slots=True)
class BucketTask:
    """Every live file of one (partition, bucket) of a primary-key table."""

    spec: WriteSpec
    partition: tuple[Any, ...]
    bucket: int
    total_buckets: int
    files: tuple[tuple[str, ManifestEntry], ...]  # (path, entry)
    name_prefix: str
    deleted: tuple[bytes | None, ...] = ()  # per file: its DV (portable bitmap bytes)
    output_level: int = TOP_LEVEL  # universal compaction: the unit's output level
    drop_delete: bool = True  # False: keys merging to no row keep their newest version


def compact_bucket(task: BucketTask) -> list[ManifestEntry]:
    """Merge one bucket's files into one sorted run (runs in a task); returns ADD entries.

    Streams: every file is read a batch at a time (minus its DV), a k-way merge by key
    (:func:`~lakeskip.catalog.write.sort_buffer.merge_sorted`; the files of a level are read
    one after the other, :func:`~lakeskip.catalog.write.bucket_lookup.sorted_runs`) yields
    chunks holding every version of their keys, the engine merges each chunk, and the output
    rolls into files at ``target-file-size``
    (:class:`~lakeskip.catalog.write.rolling_writer.RollingWriter`): memory holds one batch per
    sorted run and the output's row group being filled, not the bucket. ``task.drop_delete`` false (a universal compaction below the bucket's
    highest level): a key that merges to no row keeps its newest version, retract and all,
    to hide the older versions below."""
    schema = task.spec.schema
    layout = schema_key_layout(schema)
    row_type = schema.row_type
    dvs = task.deleted or (None,) * len(task.files)
    engine = merge_engine_of(schema_kind(schema))
    assert engine is not None, "not a primary-key table"
    batch_rows = max(1024, BufferOptions.of(schema.options).read_batch_bytes // 64)
    files = [BucketFile(path, entry, dv) for (path, entry), dv in zip(task.files, dvs, strict=True)]

    def run_versions(run: list[BucketFile]) -> Iterator[pa.Table]:
        for f in run:  # a sorted run's files one after the other: one of them open
            yield from iter_versions(
                task.spec, f.path, f.deleted, batch_rows, f.entry.file.schema_id
            )

    sources = [run_versions(run) for run in sorted_runs(task.spec, files)]
    names = (f"data-{task.name_prefix}-{i}.parquet" for i in itertools.count())
    writer = RollingWriter(
        task.spec,
        task.partition,
        task.bucket,
        task.total_buckets,
        lambda: next(names),
        kv=True,
        level=task.output_level,
    )
    try:
        for chunk in merge_sorted(sources, layout.trimmed, SEQUENCE_NUMBER):
            # every key's versions merged by the table's engine; keys that end deleted are
            # dropped (or keep their newest version: drop_delete false)
            merged = engine.merge_versions(chunk, layout.trimmed, SEQUENCE_NUMBER, VALUE_KIND)
            if not task.drop_delete:
                merged = _with_retracts(merged, chunk, layout.trimmed, engine)
            if merged.num_rows == 0:
                continue
            writer.write(
                merged.select(row_type.names),
                (merged[SEQUENCE_NUMBER].combine_chunks(), merged[VALUE_KIND].combine_chunks()),
            )
        return writer.close()
    except BaseException:
        writer.abort()
        raise


def _with_retracts(
    merged: pa.Table, chunk: pa.Table, keys: Sequence[str], engine: MergeEngine
) -> pa.Table:
    """``merged`` plus, for every key of ``chunk`` that merged to no row, its newest
    version (in the engine's order: sequence fields, then sequence number) as it is;
    sorted by key."""
    # newest first: each ordering column reversed, NULL (oldest) last
    newer = "ascending" if engine.sequence_descending else "descending"
    order = [
        *((k, "ascending", "at_end") for k in keys),
        *((c, newer, "at_end") for c in engine.sequence_fields),
        (SEQUENCE_NUMBER, "descending", "at_end"),
    ]
    newest = chunk.take(pc.sort_indices(chunk, sort_keys=order))
    newest = dedupe_first(newest, keys)
    gone = newest.join(
        merged.select(list(keys)), list(keys), join_type="left anti", use_threads=False
    )
    if gone.num_rows == 0:
        return merged
    nullable = pa.schema([f.with_nullable(True) for f in merged.schema])
    both = pa.concat_tables(
        [merged.cast(nullable), gone.select(merged.column_names).cast(nullable)]
    )
    return both.take(pc.sort_indices(both, sort_keys=[(k, "ascending") for k in keys]))


def dedupe_first(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """The first row of every run of equal keys of ``table`` (sorted by key)."""
    n = table.num_rows
    if n <= 1:
        return table
    first = np.ones(n, dtype=bool)
    differs = np.zeros(n - 1, dtype=bool)
    for k in keys:
        col = table.column(k).combine_chunks()
        ne = pc.not_equal(col.slice(0, n - 1), col.slice(1))
        differs |= np.asarray(pc.fill_null(ne, True).to_numpy(zero_copy_only=False), dtype=bool)
    first[1:] = differs
    return table.filter(pa.array(first))


def plan_universal_tasks(
    table: FileStoreTable,
    entries: Sequence[ManifestEntry],
    name_prefix: str,
    buckets: set[tuple[tuple[Any, ...], int]] | None = None,
    deleted: Mapping[str, bytes] | None = None,
    *,
    full: bool = False,
) -> list[BucketTask]:
    """One task per (partition, bucket) of ``entries`` (only ``buckets``, normalized
    partitions, when given) whose
    sorted runs universal compaction picks (:mod:`lakeskip.catalog.write.universal`): the
    picked runs' files, the unit's output level, and whether deletes may be dropped.
    ``full``: Paimon's full compaction instead (:func:`~lakeskip.catalog.write.universal.
    pick_full`, what ``full-compaction.delta-commits`` runs after a write): every run to the
    top level, or, for a bucket that is one top-level run already, one task per file with a
    DV (``deleted``)."""
    from lakeskip.catalog.partitions import normalize_partition
    from lakeskip.catalog.write.universal import (
        UniversalOptions,
        bucket_runs,
        drops_deletes,
        pick,
        pick_full,
    )

    options = UniversalOptions.of(table.schema.options)
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    deleted = deleted or {}
    raw = isinstance(table.kind, PkRaw)
    groups: dict[tuple[Any, ...], list[ManifestEntry]] = {}
    for e in entries:
        groups.setdefault((tuple(e.partition), e.bucket), []).append(e)
    tasks = []
    for i, ((partition, bucket), group) in enumerate(sorted(groups.items(), key=repr)):
        if (
            buckets is not None
            and (normalize_partition(table.schema, partition), bucket) not in buckets
        ):
            continue
        runs = bucket_runs(group)
        if full:
            with_dv = frozenset(e.file.file_name for e in group if e.file.file_name in deleted)
            unit = pick_full(runs, options, with_dv=with_dv)
        else:
            unit = pick(runs, options)
        if unit is None:
            continue
        names = set(unit.files)
        files = [e for e in group if e.file.file_name in names]
        # deletion vectors: the runs hold no retracts (Paimon's dvMaintainer case)
        drop = raw or drops_deletes(unit, runs)
        # a rewrite unit: each file on its own, so no output spans another file's keys
        parts = [[e] for e in files] if unit.rewrite else [files]
        for j, part in enumerate(parts):
            tasks.append(
                BucketTask(
                    spec,
                    partition,
                    bucket,
                    group[0].total_buckets,
                    tuple((table.data_file_path(e), e) for e in part),
                    f"{name_prefix}-{i}" if len(parts) == 1 else f"{name_prefix}-{i}-{j}",
                    tuple(deleted.get(e.file.file_name) for e in part),
                    output_level=unit.output_level,
                    drop_delete=drop,
                )
            )
    return tasks
