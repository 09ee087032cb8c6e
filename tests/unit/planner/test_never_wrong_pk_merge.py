"""``sequence.field`` and ``merge-engine = aggregation``: merging and pruning never change rows.

An independent model, a plain per-key loop written from Paimon 0.9's Java (``SortMergeReader``
with ``UserDefinedSeqComparator``, ``ReducerMergeFunctionWrapper``, ``AggregateMergeFunction``
and the ``Field*Agg`` classes, ``DeduplicateMergeFunction``), not from
``lakeskip.catalog.pk.merge_engine``, follows Paimon's two steps: each write's rows of one key
merge in the write buffer (ordered by the sequence fields, then arrival), and the written
versions merge at read time (sequence fields, then sequence number). Random writes go through
the real writer; then

* the files hold what the write-buffer model says (their merge equals the model's),
* the library's merge (compaction's ``merge_versions``) of all files equals the model, and
* for random predicates, the model's merge of only the files the planner keeps, filtered,
  equals the full result filtered: an aggregated value (a sum) can match where no single
  version does, so a planner pruning by a summed column's stats fails here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.pk_tables import write_pk
from tests.unit.expressions.strategies import predicates
from tests.unit.planner import pk_versions
from tests.unit.planner.pk_versions import filter_rows

from lakeskip import expressions as E
from lakeskip import types as T
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.pk.merge_engine import MergeEngine
from lakeskip.catalog.pk.primary_key import SEQUENCE_NUMBER, VALUE_KIND, RowKind
from lakeskip.planner.scan import ScanPlanner

ROW_TYPE = T.RowType.of(
    ("k", T.INT), ("p", T.STRING), ("q", T.INT), ("i32", T.INT), ("s", T.STRING)
)
NAMES = ROW_TYPE.names
BASE_OPTIONS = {
    "primary-key": "k,p",
    "bucket": "2",
    "metadata.stats-mode": "full",
    "file-index.bloom-filter.columns": "s,k",
    "file-index.bitmap.columns": "i32",
}
INT_FUNCTIONS = [
    "sum",
    "max",
    "min",
    "last_value",
    "last_non_null_value",
    "first_value",
    "first_non_null_value",
]
STRING_FUNCTIONS = [
    "max",
    "min",
    "listagg",
    "last_value",
    "last_non_null_value",
    "first_value",
    "first_non_null_value",
]
RETRACTABLE = {"sum", "last_value", "last_non_null_value"}


class Model:
    """Paimon 0.9's merge of one key's versions, per table setup."""

    def __init__(self, options: dict[str, str]) -> None:
        self.engine = options.get("merge-engine", "deduplicate")
        seq = options.get("sequence.field")
        self.seq = seq.split(",") if seq else []
        self.desc = options.get("sequence.field.sort-order") == "descending"
        self.fn = {
            c: options.get(f"fields.{c}.aggregate-function", "last_non_null_value") for c in NAMES
        }
        self.ignore = {c: options.get(f"fields.{c}.ignore-retract") == "true" for c in NAMES}
        self.ignore_delete = options.get("ignore-delete") == "true"
        # column -> the sequence columns of its group (its own group's, for a sequence column)
        self.group_of: dict[str, list[str]] = {}
        for k, v in options.items():
            if k.endswith(".sequence-group"):
                seq_cols = k[len("fields.") : -len(".sequence-group")].split(",")
                for c in [*seq_cols, *v.split(",")]:
                    self.group_of[c] = seq_cols

    def order(self, version: tuple[Any, int, dict[str, Any]]) -> tuple[Any, ...]:
        """Oldest first: each sequence field (NULL oldest whatever the order), then seq."""
        out: list[Any] = []
        for c in self.seq:
            v = version[2][c]
            out.append((0, 0) if v is None else (1, -v if self.desc else v))
        return (*out, version[0])

    def merge(self, versions: list[tuple[Any, int, dict[str, Any]]]) -> tuple[int, dict[str, Any]]:
        """(kind, row) of one key: ReducerMergeFunctionWrapper around the engine."""
        versions = sorted(versions, key=self.order)
        if len(versions) == 1:
            return versions[0][1], dict(versions[0][2])
        if self.engine == "deduplicate":
            return versions[-1][1], dict(versions[-1][2])
        if self.engine == "partial-update" and self.group_of:
            return self._grouped(versions)
        if self.engine == "partial-update":
            row: dict[str, Any] = {}
            for _, kind, value in versions:
                assert kind in (0, 2), "the model sees no retracts on partial-update"
                for c, v in value.items():
                    if v is not None or c not in row:
                        row[c] = v if v is not None else row.get(c)
            return 0, row
        row = {}
        for c in NAMES:
            acc: Any = None
            started = False
            for _, kind, value in versions:
                x = value[c]
                if c in ("k", "p"):
                    acc = x
                elif kind in (1, 3):
                    acc = self._retract(c, acc, x)
                elif self.fn[c] == "first_value":
                    if not started:
                        acc, started = x, True
                elif self.fn[c] == "first_non_null_value":
                    if not started and x is not None:
                        acc, started = x, True
                else:
                    acc = self._agg(c, acc, x)
            row[c] = acc
        return 0, row

    def _cmp(self, value: dict[str, Any], row: dict[str, Any], seq: list[str]) -> int:
        for c in seq:
            a, b = value[c], row[c]
            if a is None or b is None:
                if (a is None) != (b is None):
                    return -1 if a is None else 1
                continue
            if a != b:
                return -1 if a < b else 1
        return 0

    def _grouped(
        self, versions: list[tuple[Any, int, dict[str, Any]]]
    ) -> tuple[int, dict[str, Any]]:
        """PartialUpdateMergeFunction.updateWithSequenceGroup / retractWithSequenceGroup,
        field by field against the row as it changes (0.9's code), ignore-delete first."""
        row: dict[str, Any] = dict.fromkeys(NAMES)
        meet_insert = False
        for _, kind, value in versions:
            if kind in (1, 3):
                if self.ignore_delete:
                    continue
                updated: set[str] = set()
                for c in NAMES:
                    seq = self.group_of.get(c)
                    if seq is None or all(value[s] is None for s in seq):
                        continue
                    if self._cmp(value, row, seq) >= 0:
                        if c in seq:
                            for s in seq:
                                if s not in updated:
                                    row[s] = value[s]
                                    updated.add(s)
                        else:
                            row[c] = None
                continue
            meet_insert = True
            for c in NAMES:
                seq = self.group_of.get(c)
                if seq is None:
                    if value[c] is not None:
                        row[c] = value[c]
                    continue
                if all(value[s] is None for s in seq):
                    continue
                if self._cmp(value, row, seq) >= 0:
                    if c in seq:
                        for s in seq:
                            row[s] = value[s]
                    row[c] = value[c]
        return (0 if meet_insert else 3), row

    def _agg(self, c: str, acc: Any, x: Any) -> Any:
        fn = self.fn[c]
        if fn == "last_value":
            return x
        if fn == "last_non_null_value":
            return acc if x is None else x
        if acc is None or x is None:
            return x if acc is None else acc
        if fn == "sum":
            return acc + x
        if fn == "max":
            return x if acc < x else acc
        if fn == "min":
            return acc if acc < x else x
        assert fn == "listagg"
        return f"{acc},{x}"

    def _retract(self, c: str, acc: Any, x: Any) -> Any:
        if self.ignore[c]:
            return acc
        fn = self.fn[c]
        if fn == "sum":
            if acc is None:
                return None if x is None else -x
            return acc if x is None else acc - x
        if fn == "last_value":
            return None
        assert fn == "last_non_null_value", fn
        return None if x is not None else acc


def merged_rows(
    model: Model, records: list[tuple[Any, int, dict[str, Any]]]
) -> list[tuple[Any, ...]]:
    by_key: dict[tuple[Any, ...], list[tuple[Any, int, dict[str, Any]]]] = {}
    for r in records:
        by_key.setdefault((r[2]["p"], r[2]["k"]), []).append(r)
    out = []
    for versions in by_key.values():
        kind, row = model.merge(versions)
        if kind in (0, 2):
            out.append(tuple(row[c] for c in NAMES))
    return sorted(out, key=repr)


def buffer_merge(
    model: Model, write: int, rows: list[dict[str, Any]], kind: int
) -> list[tuple[Any, int, dict[str, Any]]]:
    """What Paimon's write buffer leaves of one write: per key, its rows merged (ordered by
    the sequence fields, then arrival); the versions are ordered after all earlier writes."""
    by_key: dict[tuple[Any, ...], list[tuple[Any, int, dict[str, Any]]]] = {}
    for i, r in enumerate(rows):
        by_key.setdefault((r["p"], r["k"]), []).append(((write, i), kind, r))
    out = []
    for versions in by_key.values():
        k, row = model.merge(versions)
        out.append(((write, 0), k, row))
    return out


def file_records(table: Any, entries: list[Any]) -> list[tuple[Any, int, dict[str, Any]]]:
    return pk_versions.file_records(table, entries, NAMES)


def _filter(rows: list[tuple[Any, ...]], bound: Any) -> list[tuple[Any, ...]]:
    return filter_rows(rows, bound, ROW_TYPE)


@st.composite
def setups(draw: Any) -> dict[str, str]:
    mode = draw(
        st.sampled_from(
            ["dedupe+seq", "partial-update+seq", "aggregation", "agg+seq", "partial-update+groups"]
        )
    )
    options = dict(BASE_OPTIONS)
    if mode.endswith("seq"):
        options["sequence.field"] = draw(st.sampled_from(["q", "q,i32"]))
        if draw(st.booleans()):
            options["sequence.field.sort-order"] = "descending"
    if mode == "partial-update+seq":
        options["merge-engine"] = "partial-update"
    if mode == "partial-update+groups":
        options["merge-engine"] = "partial-update"
        options["fields.q.sequence-group"] = draw(st.sampled_from(["i32", "i32,s"]))
        if draw(st.booleans()):
            options["ignore-delete"] = "true"
    if mode.startswith("agg"):
        options["merge-engine"] = "aggregation"
        seq = options.get("sequence.field", "").split(",")
        for c, fns in (("q", INT_FUNCTIONS), ("i32", INT_FUNCTIONS), ("s", STRING_FUNCTIONS)):
            if c in seq:
                continue
            fn = draw(st.sampled_from([None, *fns]), label=f"{c} function")
            if fn is not None:
                options[f"fields.{c}.aggregate-function"] = fn
            if draw(st.booleans()):
                options[f"fields.{c}.ignore-retract"] = "true"
    return options


def _retracts_allowed(options: dict[str, str]) -> bool:
    if any(k.endswith(".sequence-group") for k in options):
        return True
    if options.get("merge-engine") == "partial-update":
        return False
    if options.get("merge-engine") != "aggregation":
        return True
    for c in ("q", "i32", "s"):
        fn = options.get(f"fields.{c}.aggregate-function", "last_non_null_value")
        if fn not in RETRACTABLE and options.get(f"fields.{c}.ignore-retract") != "true":
            return False
    return True


@settings(max_examples=int(os.environ.get("LAKESKIP_NEVER_WRONG_EXAMPLES", "40")), deadline=None)
@given(data=st.data())
def test_sequence_fields_and_aggregation_merge_and_prune_as_the_model(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp: Path = tmp_path_factory.mktemp("nwpk")
    options = data.draw(setups(), label="options")
    model = Model(options)
    cat = Catalog(str(tmp / "wh"))
    table = cat.create_table("default.t", ROW_TYPE, partition_keys=["p"], options=options)
    written: list[tuple[Any, int, dict[str, Any]]] = []
    kinds = [RowKind.INSERT, RowKind.INSERT, RowKind.UPDATE_AFTER]
    if _retracts_allowed(options):
        kinds += [RowKind.DELETE, RowKind.UPDATE_BEFORE]
    small = st.one_of(st.none(), st.integers(-5, 5))
    for w in range(data.draw(st.integers(1, 5), label="writes")):
        n = data.draw(st.integers(1, 6), label="rows")
        cols = {
            "k": data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n), label="k"),
            "p": data.draw(st.lists(st.sampled_from(["x", "y"]), min_size=n, max_size=n)),
            "q": data.draw(st.lists(small, min_size=n, max_size=n), label="q"),
            "i32": data.draw(st.lists(small, min_size=n, max_size=n), label="i32"),
            "s": data.draw(
                st.lists(
                    st.one_of(st.none(), st.sampled_from(["a", "b", "c"])), min_size=n, max_size=n
                ),
                label="s",
            ),
        }
        kind = int(data.draw(st.sampled_from(kinds), label="kind"))
        if kind in (1, 3):
            # one retract per key and write: lakeskip writes retracts only by DELETE, which
            # names each key once (a write's rows share one kind, so where Paimon's buffer
            # turns two retracts of a key into a +I, lakeskip's would keep the write's kind)
            first: dict[tuple[Any, ...], int] = {}
            for i in range(n):
                first.setdefault((cols["p"][i], cols["k"][i]), i)
            keep = sorted(first.values())
            cols = {c: [cols[c][i] for i in keep] for c in cols}
            n = len(keep)
        rows = [{c: cols[c][i] for c in NAMES} for i in range(n)]
        written.extend(buffer_merge(model, w, rows, kind))
        write_pk(table, cols, RowKind(kind), f"w{w}", row_type=ROW_TYPE)
    table = table.refresh()
    every = table.scan_files()
    want_all = merged_rows(model, written)
    # the files hold what the write buffer leaves
    assert merged_rows(model, file_records(table, every)) == want_all
    # the library's merge (compaction's) of every file
    kv = pa.concat_tables([pq.read_table(table.data_file_path(e)) for e in every])
    lib = MergeEngine.for_schema(table.schema).merge_versions(
        kv, ["p", "k"], SEQUENCE_NUMBER, VALUE_KIND
    )
    assert sorted((tuple(r[c] for c in NAMES) for r in lib.to_pylist()), key=repr) == want_all
    planner = ScanPlanner(table)
    values: dict[str, list[Any]] = {
        "k": list(range(-1, 5)),
        "p": ["x", "y", "z"],
        "q": [*(r[2] for r in want_all), None, 0, 7, -11],
        "i32": [*(r[3] for r in want_all), None, 0, 3, 12, -12],
        "s": [*(r[4] for r in want_all), None, "a", "b,c", "d"],
    }
    types = {c: ROW_TYPE.field(c).type for c in values}
    for _ in range(6):
        pred = data.draw(predicates(values, depth=2, types=types), label="predicate")
        plan = planner.plan(pred)
        bound = E.bind(ROW_TYPE, pred)
        want = _filter(want_all, bound)
        got = _filter(merged_rows(model, file_records(table, list(plan.files))), bound)
        assert got == want, f"{pred!r}: kept {len(plan.files)}/{len(every)} files"


def test_a_sum_no_version_holds_is_not_pruned(tmp_path: Path) -> None:
    """``i32 = 3`` holds for the merged row (1 + 2) though no file's stats reach 3."""
    options = {
        **BASE_OPTIONS,
        "merge-engine": "aggregation",
        "fields.i32.aggregate-function": "sum",
        "fields.s.aggregate-function": "max",
    }
    cat = Catalog(str(tmp_path / "wh"))
    table = cat.create_table("default.t", ROW_TYPE, partition_keys=["p"], options=options)
    for w, v in enumerate((1, 2)):
        row = {"k": 1, "p": "x", "q": None, "i32": v, "s": "a"}
        write_pk(table, [row], prefix=f"w{w}", row_type=ROW_TYPE)
    table = table.refresh()
    assert len(ScanPlanner(table).plan(E.EqualTo("i32", 3)).files) == 2
    # a max column still prunes: its merged value is some version's; a last_non_null_value
    # column does not (a retract version clears it to NULL, a value no version may hold)
    assert len(ScanPlanner(table).plan(E.EqualTo("s", "zz")).files) == 0
    assert len(ScanPlanner(table).plan(E.EqualTo("q", 5)).files) == 2


def test_an_ignored_retract_null_is_not_pruned(tmp_path: Path) -> None:
    """``max`` with ``ignore-retract``: a key written by two DELETEs merges to a row with NULL
    in the column though both versions hold 0, so ``i32 IS NULL`` must keep its files (found
    by the hypothesis test above)."""
    options = {
        **BASE_OPTIONS,
        "merge-engine": "aggregation",
        "fields.i32.aggregate-function": "max",
        "fields.i32.ignore-retract": "true",
    }
    cat = Catalog(str(tmp_path / "wh"))
    table = cat.create_table("default.t", ROW_TYPE, partition_keys=["p"], options=options)
    model = Model(options)
    row = {"k": 2, "p": "y", "q": None, "i32": 0, "s": None}
    written = []
    for w in range(2):
        written += buffer_merge(model, w, [row], int(RowKind.DELETE))
        write_pk(table, [row], RowKind.DELETE, f"w{w}", row_type=ROW_TYPE)
    table = table.refresh()
    assert merged_rows(model, written) == [(2, "y", None, None, None)], "the model's row"
    assert len(ScanPlanner(table).plan(E.IsNull("i32")).files) == 2
