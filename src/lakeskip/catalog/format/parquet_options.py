"""Parquet writer options: ``parquet.*`` table options, named as Paimon passes them to parquet-mr.

Paimon hands every ``parquet.*`` table option to the Parquet writer's Hadoop configuration, so a
Paimon table says ``'parquet.bloom.filter.enabled#user_id' = 'true'`` to get row-group bloom
filters. lakeskip reads the same keys and maps them onto pyarrow's writer; Spark's own Parquet
reader (parquet-mr) then skips row groups and pages *inside* the files lakeskip's planner keeps.

==========================================  =====================  ==============================
key                                         default                pyarrow writer argument
==========================================  =====================  ==============================
``parquet.bloom.filter.enabled``            ``false``              bloom filter on every column
                                                                   that can have one
``parquet.bloom.filter.enabled#<col>``      (the global switch)    bloom filter on ``<col>``
``parquet.bloom.filter.expected.ndv#<col>`` rows in the file       ``bloom_filter_options`` ndv
``parquet.bloom.filter.fpp#<col>``          ``0.01`` (parquet-mr)  ``bloom_filter_options`` fpp
``parquet.page-index.enabled``              ``true``               ``write_page_index``
``parquet.enable.dictionary[#<col>]``       adaptive (see below)   ``use_dictionary``
``parquet.block.size``                      (pyarrow: 1Mi rows)    ``row_group_size``
``file.compression``                        ``zstd``               ``compression``
==========================================  =====================  ==============================

Decimals of precision up to 9 are stored as INT32 and up to 18 as INT64 (pyarrow's
``store_decimal_as_integer``), the physical types Spark and Paimon write; wider ones as
FIXED_LEN_BYTE_ARRAY.

``file.compression`` stays ``zstd``, Paimon's default, rather than Spark's snappy: measured
with ``bench/tpch_files.py`` (TPC-H SF1 ``lineitem``, the same rows in 4 files per side,
read by plain ``spark.read.parquet``, warm medians, loaded machine), Spark spent the same
CPU on lakeskip's zstd files as on its own snappy ones (q1 1.03x, q6 0.97x its CPU seconds
over Spark's files; lakeskip's files written as snappy 1.02x and 0.92x), while zstd files
are 24% smaller (170 against 223 MB) and stay readable by pypaimon 0.2, whose Paimon Java
bridge ships zstd but no snappy codec. ``'file.compression' = 'snappy'`` gives snappy
files for readers that want them.

``parquet.page-index.enabled`` is lakeskip's own key: parquet-mr (and so Paimon's Java writer)
always writes the column and offset indexes, which let Spark skip pages; pyarrow does only when
asked. Dictionary encoding is chosen per column as parquet-mr ends up choosing it: a
top-level column gets a dictionary when the first 20,000 values of the file repeat (at most
half of them distinct), nested columns always; ``parquet.enable.dictionary[#<col>]`` forces
it on or off. pyarrow's own default (a dictionary for every column, falling back to plain
encoding mid-column once the dictionary page is full) gave files that were larger and that
Spark read 2-3x slower than the same rows written by Spark. ``parquet.block.size`` (row-group bytes, as parquet-mr) becomes a row count from the
Arrow size of the rows being written, so row groups come out near that size before encoding:
smaller row groups let Spark's reader skip more of a file. A bloom filter needs a top-level column of a primitive type other than BOOLEAN (as in
parquet-mr); without ``expected.ndv`` it is sized for the file's row count, which is never too
small, so its false-positive rate stays at or below ``fpp``.

Statistics follow what Spark's pushed Parquet filters assume (issue 26): a FLOAT/DOUBLE leaf
column that holds a NaN in a file gets no statistics in that file (no min/max, no column
index; see :func:`nan_leaf_paths`), as parquet-mr writes none; pyarrow would write min/max
without the NaN, and Spark, which orders NaN above +Infinity, would then skip row groups
whose NaN rows match ``c = NaN`` or ``c > x``. Signed zeros in min/max need nothing: pyarrow
already writes a min of 0.0 as -0.0 and a max of -0.0 as +0.0, Parquet's rule (dictionaries
holding -0.0 are left to the scan: see :func:`lakeskip.catalog.format.stats.unpushable_columns`). FLOAT/DOUBLE columns
get no bloom filter even when asked: pyarrow hashes a value's bits, so ``c = 0.0`` would miss
a row group of -0.0 (and ``c = NaN`` one whose NaN has other bits), which Spark treats as equal.

Example:
    >>> from lakeskip.types import RowType, parse_sql_type
    >>> rt = RowType.of(("id", parse_sql_type("BIGINT")), ("ok", parse_sql_type("BOOLEAN")))
    >>> opts = parquet_write_options({"parquet.bloom.filter.enabled#id": "true",
    ...                               "parquet.bloom.filter.fpp#id": "0.05"}, rt)
    >>> opts.bloom_filter_options(1000)
    {'id': {'ndv': 1000, 'fpp': 0.05}}
    >>> parquet_write_options({"parquet.bloom.filter.enabled#ok": "true"}, rt)
    Traceback (most recent call last):
    ...
    lakeskip.errors.InvalidOptionError: option 'parquet.bloom.filter.enabled#ok': column ok is BOOLEAN; Parquet bloom filters need a primitive non-boolean column
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from lakeskip.errors import InvalidOptionError
from lakeskip.types import DataType, RowType, TypeRoot

__all__ = [
    "PARQUET_PREFIX",
    "BloomFilterSpec",
    "ParquetWriteOptions",
    "is_parquet_option",
    "nan_leaf_paths",
    "parquet_write_options",
]

PARQUET_PREFIX = "parquet."
BLOOM_ENABLED = "parquet.bloom.filter.enabled"
BLOOM_NDV = "parquet.bloom.filter.expected.ndv"
BLOOM_FPP = "parquet.bloom.filter.fpp"
PAGE_INDEX = "parquet.page-index.enabled"
BLOCK_SIZE = "parquet.block.size"
DICTIONARY = "parquet.enable.dictionary"
DICTIONARY_SAMPLE_ROWS = 20_000
COMPRESSION = "file.compression"
DEFAULT_BLOOM_FPP = 0.01  # parquet-mr's ParquetProperties.DEFAULT_BLOOM_FILTER_FPP
DEFAULT_COMPRESSION = "zstd"
_PER_COLUMN = (BLOOM_ENABLED, BLOOM_NDV, BLOOM_FPP, DICTIONARY)
_GLOBAL = (BLOOM_ENABLED, PAGE_INDEX, BLOCK_SIZE, DICTIONARY)


@dataclass(frozen=True, slots=True)
class BloomFilterSpec:
    """One column's Parquet bloom filter: ``ndv`` (``None``: the file's row count) and fpp."""

    ndv: int | None = None
    fpp: float = DEFAULT_BLOOM_FPP


@dataclass(frozen=True, slots=True)
class ParquetWriteOptions:
    """How lakeskip's data files are written (picklable, resolved once per write task)."""

    compression: str = DEFAULT_COMPRESSION
    page_index: bool = True
    block_size: int | None = None
    bloom_filters: Mapping[str, BloomFilterSpec] = field(default_factory=dict)
    dictionary: bool | None = None  # None: decide per column from the data
    dictionary_columns: Mapping[str, bool] = field(default_factory=dict)

    def use_dictionary(self, table: pa.Table) -> list[str]:
        """Leaf column paths to dictionary-encode in a file holding ``table``."""
        out: list[str] = []
        for f, column in zip(table.schema, table.columns, strict=True):
            forced = self.dictionary_columns.get(f.name, self.dictionary)
            leaves = _leaf_paths(f.name, f.type)
            if forced is None:
                nested = len(leaves) != 1 or leaves[0] != f.name
                forced = nested or _repeats(column)
            if forced:
                out += leaves
        return out

    def bloom_filter_options(self, num_rows: int) -> dict[str, dict[str, float | int]]:
        """pyarrow's ``bloom_filter_options`` for a file of ``num_rows`` rows."""
        return {
            col: {"ndv": spec.ndv if spec.ndv is not None else max(1, num_rows), "fpp": spec.fpp}
            for col, spec in self.bloom_filters.items()
        }

    def writer_kwargs(self, table: pa.Table) -> dict[str, object]:
        """Keyword arguments for ``pyarrow.parquet.write_table`` writing ``table``."""
        num_rows, nbytes = table.num_rows, table.nbytes
        kwargs: dict[str, object] = {
            "compression": None if self.compression == "none" else self.compression,
            "write_page_index": self.page_index,
            "use_dictionary": self.use_dictionary(table),
            # DECIMAL(p <= 9) as INT32, (p <= 18) as INT64, as Spark and Paimon write them:
            # readers decode integers faster than FIXED_LEN_BYTE_ARRAY
            "store_decimal_as_integer": True,
        }
        if self.block_size is not None and num_rows > 0:
            kwargs["row_group_size"] = max(1, self.block_size * num_rows // max(1, nbytes))
        blooms = {
            col: o
            for col, o in self.bloom_filter_options(num_rows).items()
            if col not in table.schema.names
            or not pa.types.is_floating(table.schema.field(col).type)
        }
        if blooms:
            kwargs["bloom_filter_options"] = blooms
        nan_leaves = nan_leaf_paths(table)
        if nan_leaves:
            kwargs["write_statistics"] = [
                p for f in table.schema for p in _leaf_paths(f.name, f.type) if p not in nan_leaves
            ]
        return kwargs


def nan_leaf_paths(table: pa.Table) -> frozenset[str]:
    """Leaf column paths of FLOAT/DOUBLE values in ``table`` that hold a NaN.

    These get no Parquet statistics (so no min/max in the row-group statistics and no column
    index): pyarrow leaves NaN out of min/max, and a reader that orders NaN above +Infinity, as
    Spark and parquet-mr do, would skip a row group whose NaN rows match ``c = NaN``,
    ``c > x`` or ``c <> x``. parquet-mr writes no min/max for such a chunk either.

    >>> t = pa.table({"a": [1.0, float("nan")], "b": [1.0, 2.0],
    ...               "m": pa.array([[("k", float("nan"))]], pa.map_(pa.string(), pa.float32()))
    ...               .take([0, 0])})
    >>> sorted(nan_leaf_paths(t))
    ['a', 'm.key_value.value']
    """
    out: set[str] = set()
    for f, column in zip(table.schema, table.columns, strict=True):
        for chunk in column.chunks:
            _nan_leaves(f.name, chunk, out)
    return frozenset(out)


def _nan_leaves(name: str, values: pa.Array, out: set[str]) -> None:
    t = values.type
    if pa.types.is_floating(t):
        if name not in out and pc.any(pc.is_nan(values)).as_py():
            out.add(name)
    elif pa.types.is_map(t):
        _nan_leaves(f"{name}.key_value.key", values.keys, out)
        _nan_leaves(f"{name}.key_value.value", values.items, out)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        _nan_leaves(f"{name}.list.element", values.flatten(), out)
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            _nan_leaves(f"{name}.{t.field(i).name}", values.field(i), out)


def _leaf_paths(name: str, t: pa.DataType) -> list[str]:
    """Parquet leaf column paths of an Arrow field, as pyarrow names them."""
    if pa.types.is_map(t):
        return _leaf_paths(f"{name}.key_value.key", t.key_type) + _leaf_paths(
            f"{name}.key_value.value", t.item_type
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _leaf_paths(f"{name}.list.element", t.value_type)
    if pa.types.is_struct(t):
        return [
            p
            for i in range(t.num_fields)
            for p in _leaf_paths(f"{name}.{t.field(i).name}", t.field(i).type)
        ]
    return [name]


def _repeats(column: pa.ChunkedArray) -> bool:
    """Whether a column's leading values repeat enough for a dictionary to pay."""
    sample = column.slice(0, DICTIONARY_SAMPLE_ROWS)
    valid: int = len(sample) - sample.null_count
    if valid == 0:
        return True
    if pa.types.is_boolean(column.type):
        return False
    # the non-null distinct values (``pc.count_distinct``'s count, one hash table alike, in
    # about half its time): ``unique`` keeps one null when there are nulls
    uniques = pc.unique(sample)
    distinct: int = len(uniques) - (uniques.null_count > 0)
    return 2 * distinct <= valid


def is_parquet_option(key: str) -> bool:
    """Whether ``key`` belongs to this module (validated by :func:`parquet_write_options`)."""
    return key.startswith(PARQUET_PREFIX)


def _bool(value: str, key: str) -> bool:
    v = str(value).strip().lower()
    if v not in ("true", "false"):
        raise InvalidOptionError(f"option {key!r} = {value!r}: expected true or false")
    return v == "true"


def _bloom_type_problem(t: DataType) -> str | None:
    if t.is_nested:
        return f"is {t.root.name}"
    if t.root == TypeRoot.BOOLEAN:
        return "is BOOLEAN"
    return None


def _column(key: str, name: str, row_type: RowType | None) -> str:
    if not name:
        raise InvalidOptionError(f"option {key!r}: no column after '#'")
    if row_type is None:
        return name
    f = row_type.field(name)  # ColumnNotFoundError names the column
    problem = _bloom_type_problem(f.type)
    if problem is not None:
        raise InvalidOptionError(
            f"option {key!r}: column {f.name} {problem}; Parquet bloom filters need a "
            "primitive non-boolean column"
        )
    return f.name


def parquet_write_options(
    options: Mapping[str, str], row_type: RowType | None, *, strict: bool = True
) -> ParquetWriteOptions:
    """Resolve (and validate) the Parquet writer options of a table.

    Args:
        options: the table options; keys outside ``parquet.*`` and ``file.compression`` are
            ignored here.
        row_type: the table's columns (``None`` checks only the syntax of the keys).
        strict: reject ``parquet.*`` keys lakeskip does not know (``CREATE``/``ALTER TABLE``).
            Writers pass ``False``: a table made by Paimon may carry any parquet-mr key
            (``parquet.block.size``, ...), and those are ignored rather than failing the write.

    Raises:
        InvalidOptionError: unknown ``parquet.*`` key, malformed value, or a bloom filter on a
            column that cannot have one.
        ColumnNotFoundError: a ``#<col>`` suffix names a missing column.
    """
    enabled_all = False
    page_index = True
    block_size: int | None = None
    dictionary: bool | None = None
    dict_columns: dict[str, bool] = {}
    per_column: dict[str, dict[str, tuple[str, str]]] = {}  # column -> base key -> (key, value)
    for key, value in options.items():
        if not is_parquet_option(key):
            continue
        base, sep, col = key.partition("#")
        if not sep:
            if base == BLOOM_ENABLED:
                enabled_all = _bool(value, key)
            elif base == PAGE_INDEX:
                page_index = _bool(value, key)
            elif base == BLOCK_SIZE:
                block_size = _positive_int(value, key)
            elif base == DICTIONARY:
                dictionary = _bool(value, key)
            elif strict:
                raise InvalidOptionError(f"unknown table option {key!r}{_hint(base)}")
            continue
        if base not in _PER_COLUMN:
            if strict:
                raise InvalidOptionError(f"unknown table option {key!r}{_hint(base)}")
            continue
        if base == DICTIONARY:
            if not col:
                raise InvalidOptionError(f"option {key!r}: no column after '#'")
            name = row_type.field(col).name if row_type is not None else col
            dict_columns[name] = _bool(value, key)
            continue
        name = _column(key, col, row_type)
        per_column.setdefault(name, {})[base] = (key, value)
    blooms: dict[str, BloomFilterSpec] = {}
    candidates: list[str] = list(per_column)
    if enabled_all and row_type is not None:
        candidates += [
            f.name
            for f in row_type
            if _bloom_type_problem(f.type) is None and f.name not in per_column
        ]
    for name in candidates:
        settings = per_column.get(name, {})
        enabled = enabled_all
        if BLOOM_ENABLED in settings:
            key, value = settings[BLOOM_ENABLED]
            enabled = _bool(value, key)
        ndv = _ndv(settings)
        fpp = _fpp(settings)
        if enabled:
            blooms[name] = BloomFilterSpec(ndv=ndv, fpp=fpp)
    compression = str(options.get(COMPRESSION, DEFAULT_COMPRESSION)).strip().lower()
    return ParquetWriteOptions(
        compression=compression,
        page_index=page_index,
        block_size=block_size,
        bloom_filters=blooms,
        dictionary=dictionary,
        dictionary_columns=dict_columns,
    )


def _positive_int(value: str, key: str) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise InvalidOptionError(f"option {key!r} = {value!r}: not an integer") from None
    if n <= 0:
        raise InvalidOptionError(f"option {key!r} = {value!r}: must be > 0")
    return n


def _ndv(settings: Mapping[str, tuple[str, str]]) -> int | None:
    if BLOOM_NDV not in settings:
        return None
    key, value = settings[BLOOM_NDV]
    return _positive_int(value, key)


def _fpp(settings: Mapping[str, tuple[str, str]]) -> float:
    if BLOOM_FPP not in settings:
        return DEFAULT_BLOOM_FPP
    key, value = settings[BLOOM_FPP]
    try:
        p = float(str(value).strip())
    except ValueError:
        raise InvalidOptionError(f"option {key!r} = {value!r}: not a number") from None
    if not (0.0 < p < 1.0) or math.isnan(p):
        raise InvalidOptionError(f"option {key!r} = {value!r}: must be in (0, 1)")
    return p


def _hint(base: str) -> str:
    known = [*_GLOBAL, *(k + "#<column>" for k in _PER_COLUMN)]
    close = difflib.get_close_matches(base, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else " (supported: " + ", ".join(known) + ")"
