"""Parsing and validating the ``file-index.*`` table options.

Keys (as Paimon's ``FileIndexOptions``):

* ``file-index.<type>.columns`` = ``c1,c2,m[key]`` -- which columns get an index of ``<type>``
  (``m[key]``: one key of a MAP<STRING, ...> column);
* ``file-index.<type>.<column>.<option>`` -- per-column options (``items``, ``fpp``, ...);
  for a map key, ``file-index.<type>.<map>.<option>`` applies to every key and
  ``file-index.<type>.<map>[<key>].<option>`` overrides it;
* ``file-index.in-manifest-threshold`` (default ``500 B``): containers up to this size are
  embedded in the manifest, larger ones go to a ``<data-file>.index`` file;
* ``file-index.read.enabled`` (default ``true``);
* ``file-index.paimon-compatibility`` (lakeskip's own, default ``latest``): the oldest Paimon
  release that must read the table's indexes, e.g. ``0.9``. Index types that release cannot
  read are rejected, ``bitmap`` defaults to version 1 below 1.1, and containers are laid out
  as that release's writer does (see :data:`MIN_PAIMON_VERSION`).

>>> from lakeskip import types as T
>>> rt = T.RowType.of(("id", T.BIGINT), ("m", T.map_of(T.STRING, T.STRING)))
>>> o = parse_file_index_options({
...     "file-index.bloom-filter.columns": "id,m[k]",
...     "file-index.bloom-filter.m.items": "100",
...     "file-index.bloom-filter.m[k].fpp": "0.01"}, rt)
>>> [(s.name, dict(s.options)) for s in o.specs]
[('id', {}), ('m[k]', {'items': '100', 'fpp': '0.01'})]
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from lakeskip.errors import (
    ColumnNotFoundError,
    InvalidOptionError,
    TypeMismatchError,
    UnsupportedIndexTypeError,
)
from lakeskip.index.base import parse_memory_size
from lakeskip.index.container_order import LAYOUT_LEGACY, LAYOUT_TYPE_FIRST, container_order
from lakeskip.index.registry import INDEX_TYPES, get_indexer
from lakeskip.types import DataType, RowType, TypeRoot

__all__ = [
    "IN_MANIFEST_THRESHOLD",
    "MIN_PAIMON_VERSION",
    "PAIMON_COMPATIBILITY",
    "PREFIX",
    "READ_ENABLED",
    "FileIndexOptions",
    "IndexColumnSpec",
    "is_file_index_option",
    "parse_file_index_options",
    "parse_paimon_compatibility",
]

PREFIX = "file-index."
IN_MANIFEST_THRESHOLD = "file-index.in-manifest-threshold"
READ_ENABLED = "file-index.read.enabled"
# lakeskip's own key (Paimon ignores it: not ``<type>.columns``, not three dot-parts)
PAIMON_COMPATIBILITY = "file-index.paimon-compatibility"
LATEST = "latest"
# the oldest Apache Paimon release whose readers understand each index (see docs/)
MIN_PAIMON_VERSION: Mapping[str, tuple[int, int]] = {
    "bloom-filter": (0, 8),
    "bitmap": (0, 9),  # version 1; version 2 (the default) needs 1.1
    "bsi": (1, 0),
    "range-bitmap": (1, 3),
}
BITMAP_V2_MIN_VERSION = (1, 1)
MAP_KEY_MIN_VERSION = (0, 9)  # ``m[key]`` columns (DataFileIndexWriter's map maintainer)
TYPE_FIRST_LAYOUT_VERSION = (1, 2)  # DataFileIndexWriter keyed by index type, then column
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?$")
DEFAULT_THRESHOLD = 500
_COLUMN = re.compile(r"^(?P<col>[^\[\]]+?)(?:\[(?P<key>[^\[\]]*)\])?$")


@dataclass(frozen=True, slots=True)
class IndexColumnSpec:
    """One index to build: type, column (or map key), merged options."""

    column: str
    map_key: str | None
    index_type: str
    options: Mapping[str, str] = field(default_factory=dict)
    data_type: DataType | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        """The container's column name: ``col`` or ``col[key]``."""
        return self.column if self.map_key is None else f"{self.column}[{self.map_key}]"


@dataclass(frozen=True, slots=True)
class FileIndexOptions:
    """Every index to build, the embed threshold (bytes) and whether readers use indexes."""

    specs: tuple[IndexColumnSpec, ...]
    in_manifest_threshold: int = DEFAULT_THRESHOLD
    read_enabled: bool = True
    # (container column, index types) in the order Paimon's writer lays them out
    container_order: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the oldest Paimon (major, minor) the table must stay readable by; None: no pin
    paimon_compatibility: tuple[int, int] | None = None

    @property
    def enabled(self) -> bool:
        """Whether any index is configured."""
        return bool(self.specs)


def parse_paimon_compatibility(value: str) -> tuple[int, int] | None:
    """``"0.9"`` / ``"1.1.1"`` -> ``(0, 9)`` / ``(1, 1)``; ``"latest"`` -> ``None``.

    Raises:
        InvalidOptionError: not ``latest`` nor a ``major.minor[.patch]`` version, or a
            version older than 0.8 (the first Paimon with file indexes).

    >>> parse_paimon_compatibility("0.9"), parse_paimon_compatibility(" Latest ")
    ((0, 9), None)
    """
    text = str(value).strip().lower()
    if text == LATEST:
        return None
    m = _VERSION.match(text)
    if m is None:
        raise InvalidOptionError(
            f"option {PAIMON_COMPATIBILITY!r} must be 'latest' or a Paimon version such as "
            f"'0.9' or '1.1', got {value!r}"
        )
    version = (int(m.group(1)), int(m.group(2)))
    if version < MIN_PAIMON_VERSION["bloom-filter"]:
        raise InvalidOptionError(
            f"option {PAIMON_COMPATIBILITY!r} = {value!r}: Paimon before 0.8 has no file indexes"
        )
    return version


def _version_text(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def _check_compatibility(
    spec: IndexColumnSpec, pinned: tuple[int, int], pinned_text: str
) -> IndexColumnSpec:
    """Refuse an index the pinned Paimon cannot read; default bitmap to version 1 below 1.1."""
    where = f"option 'file-index.{spec.index_type}.columns' ({spec.name})"
    need = MIN_PAIMON_VERSION.get(spec.index_type)
    if need is not None and pinned < need:
        raise InvalidOptionError(
            f"{where}: {spec.index_type} indexes need Paimon {_version_text(need)} or newer, but "
            f"{PAIMON_COMPATIBILITY} = {pinned_text!r}"
        )
    if spec.map_key is not None and pinned < MAP_KEY_MIN_VERSION:
        raise InvalidOptionError(
            f"{where}: map-key indexes need Paimon {_version_text(MAP_KEY_MIN_VERSION)} or "
            f"newer, but {PAIMON_COMPATIBILITY} = {pinned_text!r}"
        )
    if spec.index_type == "bitmap" and pinned < BITMAP_V2_MIN_VERSION:
        version = str(spec.options.get("version", "")).strip()
        if version == "2":
            raise InvalidOptionError(
                f"option 'file-index.bitmap.{spec.name}.version' = '2': bitmap version 2 needs "
                f"Paimon {_version_text(BITMAP_V2_MIN_VERSION)} or newer, but "
                f"{PAIMON_COMPATIBILITY} = {pinned_text!r}"
            )
        if not version:
            return IndexColumnSpec(
                spec.column, spec.map_key, spec.index_type, {**spec.options, "version": "1"},
                spec.data_type,
            )  # fmt: skip
    return spec


def is_file_index_option(key: str) -> bool:
    """Whether a table option belongs to the file index (``file-index.`` prefix).

    >>> is_file_index_option("file-index.bloom-filter.columns"), is_file_index_option("bucket")
    (True, False)
    """
    return key.startswith(PREFIX)


def _split_column(text: str, key: str) -> tuple[str, str | None]:
    m = _COLUMN.match(text.strip())
    if not m:
        raise InvalidOptionError(f"option {key!r}: malformed column {text!r} (use col or col[key])")
    return m.group("col").strip(), m.group("key")


def _value_type(
    row_type: RowType, column: str, map_key: str | None, key: str
) -> tuple[str, DataType]:
    try:
        f = row_type.field(column)
    except ColumnNotFoundError as e:
        head = column.split(".", 1)[0]
        if "." in column and row_type.has(head) and row_type.field(head).type.root is TypeRoot.ROW:
            # Paimon's DataFileIndexWriter indexes top-level columns and map keys only
            raise UnsupportedIndexTypeError(
                f"option {key!r}: {column} is a field of ROW column {head}; file indexes on "
                "nested ROW fields are not supported (as in Paimon: top-level columns and "
                "map keys col[key] only)"
            ) from e
        raise ColumnNotFoundError(f"option {key!r}: {e}") from e
    if map_key is None:
        return f.name, f.type
    t = f.type
    if t.root is not TypeRoot.MAP or t.key is None or t.key.root is not TypeRoot.STRING:
        raise TypeMismatchError(
            f"option {key!r}: {column}[{map_key}] needs a MAP<STRING, ...> column, {f.name} is {t}"
        )
    assert t.value is not None
    return f.name, t.value


def _suggest(key: str, index_type: str) -> str:
    """`` (did you mean ...?)`` for a mistyped ``file-index.*`` key, or ``""``."""
    candidates = [IN_MANIFEST_THRESHOLD, READ_ENABLED, PAIMON_COMPATIBILITY]
    candidates += [f"{PREFIX}{t}.columns" for t in INDEX_TYPES]
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
    if not close and index_type in INDEX_TYPES:
        close = [f"{PREFIX}{index_type}.columns"]
    return f" (did you mean {close[0]!r}?)" if close else ""


def parse_file_index_options(options: Mapping[str, str], schema: RowType) -> FileIndexOptions:
    """Parse and validate every ``file-index.*`` option against the table's columns.

    Raises:
        UnknownIndexTypeError: an index type that does not exist.
        ColumnNotFoundError: an index on a column that does not exist.
        UnsupportedIndexTypeError: an index that cannot handle the column's type.
        TypeMismatchError: a map-key index on a column that is not MAP<STRING, ...>.
        InvalidOptionError: unknown per-index option, option for an unindexed column,
            malformed value.
    """
    threshold = DEFAULT_THRESHOLD
    read_enabled = True
    columns: dict[str, list[tuple[str, str | None, str]]] = {}  # type -> [(col, key, raw)]
    per_column: dict[tuple[str, str], dict[str, str]] = {}  # (type, raw column) -> opts
    for key, value in options.items():
        if not key.startswith(PREFIX):
            continue
        if key == IN_MANIFEST_THRESHOLD:
            threshold = parse_memory_size(value, key)
            continue
        if key == PAIMON_COMPATIBILITY:
            continue  # applied below, once the specs are known
        if key == READ_ENABLED:
            v = str(value).strip().lower()
            if v not in ("true", "false"):
                raise InvalidOptionError(f"option {key!r} must be true or false, got {value!r}")
            read_enabled = v == "true"
            continue
        rest = key[len(PREFIX) :]
        index_type, _, tail = rest.partition(".")
        if not tail or ("." not in tail and tail != "columns"):
            raise InvalidOptionError(f"unknown option {key!r}{_suggest(key, index_type)}")
        get_indexer(index_type)  # UnknownIndexTypeError
        if tail == "columns":
            specs = []
            parts = str(value).split(",")
            while parts and parts[-1] == "":  # Java's split drops trailing empty strings
                parts.pop()
            if not parts:
                raise InvalidOptionError(f"option {key!r} names no columns")
            for part in parts:
                if not part.strip():
                    # Paimon: "Wrong option in <key>, should not have empty column"
                    raise InvalidOptionError(f"option {key!r} has an empty column in {value!r}")
                col, mkey = _split_column(part, key)
                specs.append((col, mkey, part.strip()))
            columns[index_type] = specs
            continue
        col_text, dot, opt = tail.rpartition(".")
        if not dot or not col_text or not opt:
            raise InvalidOptionError(f"unknown option {key!r}{_suggest(key, index_type)}")
        per_column.setdefault((index_type, col_text), {})[opt] = str(value)
    specs_out: list[IndexColumnSpec] = []
    used: set[tuple[str, str]] = set()
    seen: set[tuple[str, str, str | None]] = set()
    for index_type, cols in columns.items():
        indexer = get_indexer(index_type)
        for col, mkey, _raw in cols:
            name, dtype = _value_type(schema, col, mkey, f"file-index.{index_type}.columns")
            if (index_type, name, mkey) in seen:
                continue
            seen.add((index_type, name, mkey))
            if not indexer.supports(dtype):
                raise UnsupportedIndexTypeError(
                    f"option 'file-index.{index_type}.columns': {index_type} index does not support column "
                    f"{name if mkey is None else f'{name}[{mkey}]'} {dtype}"
                )
            merged: dict[str, str] = {}
            for ck in dict.fromkeys((col, name)):
                if (index_type, ck) in per_column:
                    merged.update(per_column[(index_type, ck)])
                    used.add((index_type, ck))
            if mkey is not None:
                for ck in (f"{col}[{mkey}]", f"{name}[{mkey}]"):
                    if (index_type, ck) in per_column:
                        merged.update(per_column[(index_type, ck)])
                        used.add((index_type, ck))
            indexer.validate_options(dtype, merged)
            specs_out.append(IndexColumnSpec(name, mkey, index_type, merged, dtype))
    for (index_type, col_text), opts in per_column.items():
        if (index_type, col_text) not in used:
            some = next(iter(opts))
            raise InvalidOptionError(
                f"option 'file-index.{index_type}.{col_text}.{some}': column {col_text} has no "
                f"{index_type} index (add it to file-index.{index_type}.columns)"
            )
    pinned: tuple[int, int] | None = None
    if PAIMON_COMPATIBILITY in options:
        pinned_text = str(options[PAIMON_COMPATIBILITY])
        pinned = parse_paimon_compatibility(pinned_text)
        if pinned is not None:
            specs_out = [_check_compatibility(s, pinned, pinned_text) for s in specs_out]
    layout = (
        LAYOUT_LEGACY
        if pinned is not None and pinned < TYPE_FIRST_LAYOUT_VERSION
        else LAYOUT_TYPE_FIRST
    )
    order = container_order(
        [(s.column, s.map_key, s.index_type) for s in specs_out], options, layout
    )
    return FileIndexOptions(tuple(specs_out), threshold, read_enabled, tuple(order), pinned)
