"""The Spark catalog's write callbacks: INSERT / overwrite of a Dataset (the Spark-task
writer and one atomic commit), a streaming query's micro-batch (the same write, committed
exactly once) and the DELETE / UPDATE / MERGE INTO ``LakeDmlStrategy`` hands over (the
statement executor ``Session.sql`` uses)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lakeskip.catalog.format.snapshot import CommitIdentity
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import InvalidArgumentError, UnsupportedStatementError
from lakeskip.expressions import and_, bind, evaluate_arrow
from lakeskip.spark.bridge.catalog_context import ServiceContext
from lakeskip.spark.jvm.protocol import (
    DmlRequest,
    EmptyReply,
    StreamWriteReply,
    StreamWriteRequest,
    WriteMode,
    WriteReply,
    WriteRequest,
)
from lakeskip.spark.read.predicate_json import translate
from lakeskip.types import RowType, from_internal

__all__ = ["dml", "stream_write", "write"]


def write(ctx: ServiceContext, req: WriteRequest, jdf: Any) -> WriteReply:
    """Write the Dataset ``jdf`` to the table (append, truncate, or overwrite the partitions
    ``condition`` selects)."""
    from pyspark.sql import DataFrame
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    from lakeskip.spark.write.writer import align_by_position, write_dataframe

    table = ctx.table(req)
    row_type = table.schema.row_type
    df: DataFrame = ClassicDataFrame(jdf, ctx.session_of(jdf.sparkSession()))
    session = req.session
    tz = str(session.time_zone or "UTC") if session is not None else ctx.time_zone
    what = f"write to {table.identifier}"
    partitions: list[tuple[Any, ...]] | None = None
    if req.mode is WriteMode.OVERWRITE:
        partitions = _overwrite_partitions(table, req.condition, tz)
    aligned = align_by_position(df, row_type, what)
    if req.mode is WriteMode.APPEND:
        snap = write_dataframe(table, aligned)
    elif req.mode is WriteMode.DYNAMIC:  # Paimon's dynamic-partition-overwrite
        snap = write_dataframe(table, aligned, overwrite=True)
    else:
        snap = write_dataframe(
            table,
            aligned,
            overwrite=True,
            overwrite_partitions=partitions,
            overwrite_all=partitions is None,
        )
    return WriteReply(snapshot_id=snap.id if snap is not None else None)


def stream_write(ctx: ServiceContext, req: StreamWriteRequest, jdf: Any) -> StreamWriteReply:
    """Write micro-batch ``batch_id`` of streaming query ``query_id`` (the batch's rows as
    the Dataset ``jdf``), as an INSERT (columns by name, as Spark's streaming sinks and
    ``DataFrameWriter`` take them): data files, stats and indexes in Spark tasks, one
    snapshot whose commit user and identifier are the query and the batch, then the
    compaction any write runs (and, on an unaware-bucket append table, the size-based
    compaction of Paimon's streaming writers: ``compaction.min.file-num``). A batch the table already holds (Spark runs the last batch
    again after a restart when its commit log missed it) writes nothing: every batch lands
    exactly once (:class:`~lakeskip.catalog.format.snapshot.CommitIdentity`)."""
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    from lakeskip.spark.write.stream_compaction import compact_after_stream_batch
    from lakeskip.spark.write.writer import align_by_name, write_dataframe

    if req.mode not in (WriteMode.APPEND, WriteMode.TRUNCATE):
        raise InvalidArgumentError(f"streaming write: mode {req.mode} is not supported")
    table = ctx.table(req)
    identity = CommitIdentity(req.query_id, req.batch_id)
    if table.committed(identity):
        return StreamWriteReply(snapshot_id=None, replayed=True)
    df = ClassicDataFrame(jdf, ctx.session_of(jdf.sparkSession()))
    what = f"streaming write to {table.identifier}"
    aligned = align_by_name(df, table.schema.row_type, what)
    truncate = req.mode is WriteMode.TRUNCATE
    snap = write_dataframe(
        table, aligned, overwrite=truncate, overwrite_all=truncate, identity=identity
    )
    if snap is not None:
        compact_after_stream_batch(table, snap)
    return StreamWriteReply(snapshot_id=snap.id if snap is not None else None, replayed=False)


def _overwrite_partitions(
    table: FileStoreTable, condition: Sequence[Any], time_zone: str
) -> list[tuple[Any, ...]] | None:
    """The live partitions an overwrite condition selects exactly (``None``: all)."""
    import pyarrow as pa

    schema = table.schema
    keys = list(schema.partition_keys)
    problem = (
        f"overwrite of {table.identifier} by a condition: only conditions on partition "
        f"columns ({', '.join(keys) or 'none'}) are supported"
    )
    part_type = RowType(tuple(schema.row_type.field(k) for k in keys))
    if not keys:
        raise InvalidArgumentError(problem)
    exprs = []
    for c in condition:
        t = translate(c, part_type)
        if t is None or not t[1]:
            raise InvalidArgumentError(problem)
        exprs.append(t[0])
    if not exprs:
        return None
    pred = exprs[0]
    for e in exprs[1:]:
        pred = and_(pred, e)
    live = sorted({e.partition for e in table.scan_files()}, key=repr)
    if not live:
        return []
    columns = {
        k: [from_internal(part_type.field(k).type, v[i]) for v in live] for i, k in enumerate(keys)
    }
    batch = pa.table(
        {k: pa.array(columns[k], type=part_type.field(k).type.to_arrow()) for k in keys}
    )
    mask = evaluate_arrow(bind(part_type, pred, time_zone=time_zone), batch)
    return [part for part, keep in zip(live, mask.to_pylist(), strict=True) if keep]


def dml(ctx: ServiceContext, req: DmlRequest, jsession: Any) -> EmptyReply:
    """Run the statement in its own session (``jsession``); its reports go under the tag."""
    runner = ctx.dml_runner
    if runner is None:
        raise UnsupportedStatementError(
            f"{req.verb} on a lakeskip table needs lakeskip.connect() in this Python process"
        )
    db, name = ctx.ident(req, req.name).split(".", 1)
    reports = runner(ctx.catalog(req), ctx.session_of(jsession), req.sql, db, name)
    for r in reports:
        ctx.reports.add(req.tag, r)
    return EmptyReply()
