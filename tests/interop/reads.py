"""A table's rows as lakeskip, Paimon 0.9 (Java, the ``paimon_java`` fixture) and pypaimon
read them, in the forms the interop tests compare: rows of text (``None`` for NULL) sorted,
or rows as JSON keys."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tests.interop.test_pypaimon import run_pypaimon

__all__ = ["READ_SCRIPT", "java_rows", "json_keys", "lakeskip_rows", "pypaimon_rows", "text_rows"]

#: pypaimon's merge-on-read of a whole table: ``<warehouse> <db.table>`` -> a JSON list of rows
READ_SCRIPT = """
    import json, sys
    from pypaimon import CatalogFactory
    t = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table(sys.argv[2])
    rb = t.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    print(json.dumps(data.to_pylist(), default=str))
"""


def _text(v: Any, lower: bool) -> str | None:
    if v is None:
        return None
    return str(v).lower() if lower else str(v)


def text_rows(rows: Iterable[Sequence[Any]], lower: bool = False) -> list[list[str | None]]:
    """Every value as text (lower case with ``lower``: booleans, say), the rows sorted."""
    return sorted(([_text(x, lower) for x in r] for r in rows), key=repr)


def lakeskip_rows(session: Any, sql: str, lower: bool = False) -> list[list[str | None]]:
    """The rows of ``sql`` through lakeskip's session, as :func:`text_rows`."""
    return text_rows(session.sql(sql).collect(), lower)


def java_rows(
    paimon_java: Any, wh: Path | str, table: str, lower: bool = False
) -> list[list[str | None]]:
    """Paimon 0.9's merge-on-read of ``table`` (``db.name``), as :func:`text_rows`."""
    (result,) = paimon_java(wh, {"op": "read", "table": table, "queries": []})
    return text_rows(result["rows"], lower)


def pypaimon_rows(python: str, wh: Path | str, table: str) -> list[dict[str, Any]]:
    """pypaimon's merge-on-read of ``table`` (``db.name``): one dict per row."""
    rows: list[dict[str, Any]] = run_pypaimon(python, READ_SCRIPT, str(wh), table)
    return rows


def json_keys(rows: Iterable[dict[str, Any]]) -> list[str]:
    """Rows as sorted JSON texts: equal for the same rows whatever their order."""
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
