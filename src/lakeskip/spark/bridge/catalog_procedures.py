"""The Spark catalog's procedure callbacks (``CALL <catalog>.sys.x(...)`` through Spark's
procedure API) and the parser extension's (Paimon statements Spark's parser rejects)."""

from __future__ import annotations

import base64
import datetime
import math
from collections.abc import Mapping
from typing import Any

from lakeskip.spark.bridge.catalog_context import ServiceContext
from lakeskip.spark.jvm.protocol import (
    CallProcedureRequest,
    CatalogRequest,
    ListProceduresReply,
    ProcedureInfoReply,
    ProcedureInfoRequest,
    ProcedureParameter,
    ProcedureResultReply,
    RewriteSqlReply,
    RewriteSqlRequest,
)

__all__ = ["call_procedure", "list_procedures", "procedure_info", "rewrite_sql"]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _json_value(v: Any) -> Any:
    """A procedure result value as ``LakeProcedure.internal`` reads it, of any type: lists
    for arrays, ``[key, value]`` pairs for maps, field lists for structs (tuples), days for
    dates, microseconds for timestamps (naive ones are UTC), text for decimals and
    non-finite floats (Java's spelling), base64 for binary.

    >>> _json_value({"a": [1.5, float("nan")]}), _json_value(datetime.date(1970, 1, 3))
    ([['a', [1.5, 'NaN']]], 2)
    """
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isfinite(v):
            return v
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, Mapping):
        return [[_json_value(k), _json_value(x)] for k, x in v.items()]
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, datetime.datetime):
        aware = v if v.tzinfo is not None else v.replace(tzinfo=datetime.UTC)
        return (aware - _EPOCH) // datetime.timedelta(microseconds=1)
    if isinstance(v, datetime.date):
        return (v - _EPOCH.date()).days
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode("ascii")
    return str(v)


def procedure_info(ctx: ServiceContext, req: ProcedureInfoRequest, arg: Any) -> ProcedureInfoReply:
    from lakeskip.procedures.registry import get_procedure

    proc = get_procedure(req.procedure)
    # every parameter is declared STRING to Spark (numbers and booleans cast to it), so
    # Python checks and converts the value (Procedure.bind_arguments) and a bad one is a
    # one-line error naming the argument, not Spark's CAST_INVALID_INPUT
    return ProcedureInfoReply(
        name=req.procedure,
        description=proc.doc,
        parameters=tuple(
            ProcedureParameter(name=q.name, type="string", required=q.required)
            for q in proc.parameters
        ),
    )


def list_procedures(ctx: ServiceContext, req: CatalogRequest, arg: Any) -> ListProceduresReply:
    from lakeskip.procedures.registry import PROCEDURES

    return ListProceduresReply(procedures=tuple(sorted(k.split(".", 1)[1] for k in PROCEDURES)))


def call_procedure(
    ctx: ServiceContext, req: CallProcedureRequest, jsession: Any
) -> ProcedureResultReply:
    from lakeskip.procedures.base import run_procedure
    from lakeskip.procedures.registry import get_procedure
    from lakeskip.spark.write.executor import SparkExecutor

    proc = get_procedure(req.procedure)
    bound = proc.bind_arguments([], dict(req.arguments))
    # the calling session's namespace when its current catalog is this one (USE db)
    current = req.current_namespace
    result = run_procedure(
        proc,
        catalog=ctx.catalog(req),
        executor=SparkExecutor(ctx.session_of(jsession)),
        arguments=bound,
        default_database=current[0] if len(current) == 1 else "default",
    )
    return ProcedureResultReply(
        schema=result.spark_schema(),
        rows=tuple([_json_value(v) for v in row] for row in result.rows()),
    )


def rewrite_sql(ctx: ServiceContext, req: RewriteSqlRequest, arg: Any) -> RewriteSqlReply:
    """Spark SQL for what Spark's parser rejects or cannot route: Paimon's
    ``CREATE TABLE ... WITH (...)`` and ``CALL sys.x(...)`` (``sql`` None: no idea)."""
    from lakeskip.spark.bridge.sql_rewrite import lakeskip_catalogs, rewrite_for_spark

    # the calling session's lakeskip catalogs (its current one first, sent by LakeParser),
    # then attached ones
    catalogs = list(
        dict.fromkeys([*req.catalogs, *lakeskip_catalogs(ctx.spark, ctx.bound_catalogs())])
    )
    current = req.current_catalog
    if current is None:
        current = str(ctx.spark.catalog.currentCatalog())
    return RewriteSqlReply(sql=rewrite_for_spark(req.sql, catalogs, current))
