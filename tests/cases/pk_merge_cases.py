"""The merge-rule case table (``pk_merge_cases.json``) as Python values, and how to lay a
case's versions down as a real table's level-0 files (for the readers that need files)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

from lakeskip import types as T
from lakeskip.catalog.pk.merge_engine import ERRORS
from lakeskip.catalog.pk.primary_key import SEQUENCE_NUMBER, VALUE_KIND

_KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
KEY = "k"


@dataclass(frozen=True)
class Case:
    name: str
    row_type: T.RowType
    options: dict[str, str]
    versions: tuple[tuple[int, int, dict[str, Any]], ...]  # (sequence, kind, values)
    rows: tuple[tuple[Any, ...], ...] | None  # sorted by key; None: an error
    error: str | None  # the text of merge_engine.ERRORS[...] up to its first placeholder

    @property
    def names(self) -> list[str]:
        return self.row_type.names

    def versions_table(self, key_offset: int = 0) -> pa.Table:
        """Every version as one table: the columns, then ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``."""
        cols: dict[str, list[Any]] = {n: [] for n in self.names}
        for _, _, values in self.versions:
            for n in self.names:
                cols[n].append(self._value(n, values.get(n), key_offset))
        arrays = [
            pa.array(cols[n], type=self.row_type.field(n).type.to_arrow()) for n in self.names
        ]
        return pa.Table.from_arrays(
            [
                *arrays,
                pa.array([v[0] for v in self.versions], pa.int64()),
                pa.array([v[1] for v in self.versions], pa.int8()),
            ],
            names=[*self.names, SEQUENCE_NUMBER, VALUE_KIND],
        )

    def _value(self, name: str, value: Any, key_offset: int) -> Any:
        if value is None:
            return None
        if name == KEY:
            return value + key_offset
        if self.row_type.field(name).type.root == T.TypeRoot.DECIMAL:
            return Decimal(value)
        return value

    def expected(self, key_offset: int = 0) -> list[tuple[Any, ...]]:
        assert self.rows is not None
        return [
            tuple(self._value(n, v, key_offset) for n, v in zip(self.names, r, strict=True))
            for r in self.rows
        ]

    def file_tables(self, key_offset: int = 0) -> list[tuple[pa.Table, pa.Array, pa.Array]]:
        """The versions spread over files as a writer leaves them: each file sorted by key with
        unique keys (the i-th version of every key goes to file i); per file (values,
        sequence numbers, kinds)."""
        t = self.versions_table(key_offset)
        per_key: dict[Any, int] = {}
        slots: list[int] = []
        for k in t.column(KEY).to_pylist():
            slots.append(per_key.get(k, 0))
            per_key[k] = slots[-1] + 1
        out = []
        for i in range(max(slots, default=-1) + 1):
            part = t.filter(pa.array([s == i for s in slots])).sort_by(KEY)
            out.append(
                (
                    part.select(self.names),
                    part.column(SEQUENCE_NUMBER).combine_chunks(),
                    part.column(VALUE_KIND).combine_chunks(),
                )
            )
        return out


def load() -> list[Case]:
    raw = json.loads((Path(__file__).parent / "pk_merge_cases.json").read_text())
    cases = []
    for c in raw["cases"]:
        fields = [(n, T.parse_sql_type(t)) for n, t in c["columns"]]
        row_type = T.RowType.of(*fields)
        names = [n for n, _ in fields]
        rows = None
        if "rows" in c:
            rows = tuple(
                tuple(r.get(n) for n in names) for r in sorted(c["rows"], key=lambda r: r[KEY])
            )
        error = None
        if "error" in c:
            error = ERRORS[c["error"]].split("{", 1)[0]
        cases.append(
            Case(
                c["name"],
                row_type,
                dict(c["options"]),
                tuple((v["seq"], _KINDS[v["kind"]], v["row"]) for v in c["versions"]),
                rows,
                error,
            )
        )
    return cases


def table_options(case: Case, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {"primary-key": KEY, "bucket": "1", **case.options, **(extra or {})}


def option_groups(cases: Sequence[Case]) -> dict[str, list[Case]]:
    """Cases that may share one table (same columns and options, no error), by a group name."""
    groups: dict[str, list[Case]] = {}
    for c in cases:
        if c.error is not None:
            groups[f"e{len(groups)}"] = [c]
            continue
        sig = json.dumps([str(c.row_type), sorted(c.options.items())])
        groups.setdefault(sig, []).append(c)
    return {f"g{i}": g for i, g in enumerate(groups.values())}
