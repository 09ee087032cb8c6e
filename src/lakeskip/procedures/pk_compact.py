"""Full compaction of a primary-key table: each bucket becomes one sorted run at the top level.

One task per (partition, bucket) reads every live file of the bucket, keeps the newest version
of each key (largest ``_SEQUENCE_NUMBER``) and drops keys whose newest version is ``-U``/``-D``
(nothing older lies below the top level, so a delete has nothing left to hide), and writes the
survivors sorted by key -- rolled at ``target-file-size`` into non-overlapping files -- at level
``num-levels - 1`` with their own sequence numbers and kinds (a version written concurrently
at level 0 still sorts after them). The driver commits one COMPACT snapshot that deletes the
bucket's old files; the commit fails with ``CommitConflictError`` if one was removed meanwhile.

With deletion vectors the files are read minus their DVs (a DELETE there is only a DV mark)
and the commit drops the DVs, failing if one changed meanwhile.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.kind import merge_engine_of, schema_kind
from lakeskip.catalog.options import target_file_size
from lakeskip.catalog.pk.primary_key import (
    SEQUENCE_NUMBER,
    TOP_LEVEL,
    VALUE_KIND,
    schema_key_layout,
)
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.data_writer import WriteSpec, write_kv_data_file
from lakeskip.catalog.write.pk_dv_write import read_versions

__all__ = ["TOP_LEVEL", "BucketTask", "compact_bucket", "plan_bucket_tasks"]

_MEMORY_RATIO = 3.0  # Arrow bytes per Parquet byte, the writer's first guess


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


def plan_bucket_tasks(
    table: FileStoreTable,
    entries: Sequence[ManifestEntry],
    name_prefix: str,
    deleted: Mapping[str, bytes] | None = None,
) -> list[BucketTask]:
    """One task per (partition, bucket) of ``entries`` that has more than one file, a file
    below the top level or a file with a DV (``deleted``: data file name -> its DV as
    portable bitmap bytes); a single clean top-level file is already compacted."""
    spec = WriteSpec(file_io=table.file_io, table_path=table.path, schema=table.schema)
    deleted = deleted or {}
    groups: dict[tuple[Any, ...], list[ManifestEntry]] = {}
    for e in entries:
        groups.setdefault((e.partition, e.bucket), []).append(e)
    tasks = []
    for i, ((partition, bucket), group) in enumerate(sorted(groups.items(), key=repr)):
        if (
            len(group) == 1
            and group[0].file.level == TOP_LEVEL
            and group[0].file.file_name not in deleted
        ):
            continue
        tasks.append(
            BucketTask(
                spec,
                tuple(partition),
                bucket,
                group[0].total_buckets,
                tuple((table.data_file_path(e), e) for e in group),
                f"{name_prefix}-{i}",
                tuple(deleted.get(e.file.file_name) for e in group),
            )
        )
    return tasks


def compact_bucket(task: BucketTask) -> list[ManifestEntry]:
    """Merge one bucket's files into one sorted run (runs in a task); returns ADD entries."""
    schema = task.spec.schema
    layout = schema_key_layout(schema)
    row_type = schema.row_type
    dvs = task.deleted or (None,) * len(task.files)
    parts = [
        read_versions(task.spec, path, dv) for (path, _), dv in zip(task.files, dvs, strict=True)
    ]
    # the same columns, but nullability differs between files read and rows written
    nullable = pa.schema([f.with_nullable(True) for f in parts[0].schema])
    merged = pa.concat_tables([p.cast(nullable) for p in parts])
    # every key's versions merged by the table's engine; keys that end deleted are dropped
    engine = merge_engine_of(schema_kind(schema))
    assert engine is not None, "not a primary-key table"
    latest = engine.merge_versions(merged, layout.trimmed, SEQUENCE_NUMBER, VALUE_KIND)
    if latest.num_rows == 0:
        return []
    target = target_file_size(schema.options)
    pieces = max(1, math.ceil(latest.nbytes / (target * _MEMORY_RATIO)))
    step = math.ceil(latest.num_rows / pieces)
    out = []
    for k, start in enumerate(range(0, latest.num_rows, step)):
        chunk = latest.slice(start, step)
        out.append(
            write_kv_data_file(
                task.spec,
                chunk.select(row_type.names),
                task.partition,
                f"data-{task.name_prefix}-{k}.parquet",
                task.bucket,
                task.total_buckets,
                0,
                versions=(
                    chunk[SEQUENCE_NUMBER].combine_chunks(),
                    chunk[VALUE_KIND].combine_chunks(),
                ),
                level=TOP_LEVEL,
            )
        )
    return out
