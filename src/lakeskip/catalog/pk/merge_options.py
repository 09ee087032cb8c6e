"""The options of primary-key merge rules: the engine, delete handling, ``sequence.field``,
partial-update sequence groups and (through :mod:`lakeskip.catalog.pk.aggregation`) aggregate
functions -- their names, parsing and validation. The rules themselves are in
:mod:`lakeskip.catalog.pk.merge_engine`, which re-exports what is here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lakeskip.catalog.pk.aggregation import check_aggregation, check_functions
from lakeskip.errors import InvalidOptionError
from lakeskip.types import RowType, TypeRoot

__all__ = [
    "AGGREGATION",
    "DEDUPLICATE",
    "FIRST_ROW",
    "IGNORE_DELETE",
    "MERGE_ENGINE",
    "PARTIAL_UPDATE",
    "REMOVE_RECORD_ON_DELETE",
    "SEQUENCE_FIELD",
    "SEQUENCE_FIELD_SORT_ORDER",
    "check_merge_options",
    "is_merge_option",
    "sequence_fields",
    "sequence_groups",
    "unsupported_merge_option",
]

MERGE_ENGINE = "merge-engine"
DEDUPLICATE = "deduplicate"
PARTIAL_UPDATE = "partial-update"
FIRST_ROW = "first-row"
AGGREGATION = "aggregation"
IGNORE_DELETE = "ignore-delete"
REMOVE_RECORD_ON_DELETE = "partial-update.remove-record-on-delete"
SEQUENCE_FIELD = "sequence.field"
SEQUENCE_FIELD_SORT_ORDER = "sequence.field.sort-order"

_KINDS = (DEDUPLICATE, PARTIAL_UPDATE, FIRST_ROW, AGGREGATION)
# row kinds (Paimon's RowKind bytes): +I 0, -U 1, +U 2, -D 3
_ADD = (0, 2)
_DELETE = 3
_UNSUPPORTED_EXACT = {
    "partial-update.remove-record-on-sequence-group": "sequence groups",
    "aggregation.remove-record-on-delete": "a Paimon 1.0 option Paimon 0.9 readers ignore",
    "first-row.ignore-delete": "use 'ignore-delete'",
    "partial-update.ignore-delete": "use 'ignore-delete'",
    "deduplicate.ignore-delete": "use 'ignore-delete'",
}
_UNSUPPORTED_FIELD_SUFFIXES = {
    ".distinct": "aggregation functions",
    ".nested-key": "aggregation functions",
}
_AGGREGATION_SUFFIXES = (".aggregate-function", ".ignore-retract", ".list-agg-delimiter")
# sequence field types whose order is the same in pyarrow, Spark and Paimon (no FLOAT/DOUBLE:
# NaN and -0.0 order differently between them)
_SEQUENCE_ROOTS = frozenset(
    {
        TypeRoot.TINYINT,
        TypeRoot.SMALLINT,
        TypeRoot.INT,
        TypeRoot.BIGINT,
        TypeRoot.DECIMAL,
        TypeRoot.DATE,
        TypeRoot.TIMESTAMP,
        TypeRoot.TIMESTAMP_LTZ,
        TypeRoot.STRING,
    }
)


def _flag(options: Mapping[str, str], key: str) -> bool:
    raw = str(options.get(key, "false")).strip().lower()
    if raw not in ("true", "false"):
        raise InvalidOptionError(f"option {key!r} = {options[key]!r}: expected true or false")
    return raw == "true"


def _engine(options: Mapping[str, str]) -> str:
    return str(options.get(MERGE_ENGINE, DEDUPLICATE)).strip().lower()


def _is_aggregation_option(key: str) -> bool:
    return key == "fields.default-aggregate-function" or (
        key.startswith("fields.") and key.endswith(_AGGREGATION_SUFFIXES)
    )


def is_merge_option(key: str) -> bool:
    """Whether ``key`` changes how the stored versions of a key merge (fixed at CREATE)."""
    if key.startswith("fields.") and key.endswith(_GROUP_SUFFIX):
        return True
    return key in (
        MERGE_ENGINE,
        IGNORE_DELETE,
        REMOVE_RECORD_ON_DELETE,
        SEQUENCE_FIELD,
        SEQUENCE_FIELD_SORT_ORDER,
    ) or _is_aggregation_option(key)


def unsupported_merge_option(key: str) -> str | None:
    """Why ``key`` (a Paimon merge-function option) is refused, or None if it is not one."""
    if key in _UNSUPPORTED_EXACT:
        return _UNSUPPORTED_EXACT[key]
    if key.startswith("fields."):
        for suffix, what in _UNSUPPORTED_FIELD_SUFFIXES.items():
            if key.endswith(suffix):
                return what
    return None


_GROUP_SUFFIX = ".sequence-group"


def sequence_groups(
    options: Mapping[str, str],
) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    """Partial-update sequence groups, (sequence columns, the columns they order) each:
    ``fields.<s1>,<s2>.sequence-group = <a>,<b>`` (Paimon's spelling), sorted by key."""
    out = []
    for key in sorted(options):
        if key.startswith("fields.") and key.endswith(_GROUP_SUFFIX):
            seq = key[len("fields.") : -len(_GROUP_SUFFIX)]
            out.append(
                (
                    tuple(c.strip() for c in seq.split(",")),
                    tuple(c.strip() for c in str(options[key]).split(",")),
                )
            )
    return tuple(out)


def sequence_fields(options: Mapping[str, str]) -> tuple[str, ...]:
    """The ``sequence.field`` columns (Paimon splits on ``,``)."""
    raw = options.get(SEQUENCE_FIELD)
    if raw is None or not str(raw).strip():
        return ()
    return tuple(c.strip() for c in str(raw).split(","))


def _descending(options: Mapping[str, str]) -> bool:
    raw = str(options.get(SEQUENCE_FIELD_SORT_ORDER, "ascending")).strip().lower()
    if raw not in ("ascending", "descending"):
        raise InvalidOptionError(
            f"option {SEQUENCE_FIELD_SORT_ORDER!r} = {options[SEQUENCE_FIELD_SORT_ORDER]!r}: "
            "expected ascending or descending"
        )
    return raw == "descending"


def check_merge_options(
    options: Mapping[str, str], primary_keys: Sequence[str], row_type: RowType | None = None
) -> None:
    """Validate the merge-engine options of a table (any table: they need a primary key);
    ``row_type``: the columns, to check the options that name them (None skips that).

    Raises:
        InvalidOptionError: an unknown engine, a merge option on an append table or with the
            wrong engine, sequence groups, an unknown or unsupported aggregate function (named),
            a bad sequence field, a malformed boolean.
    """
    engine = _engine(options)
    for key in options:
        why = unsupported_merge_option(key)
        if why is not None:
            raise InvalidOptionError(f"option {key!r} is not supported yet ({why})")
        if _is_aggregation_option(key) and engine != AGGREGATION:
            raise InvalidOptionError(
                f"option {key!r} needs 'merge-engine' = 'aggregation' (aggregation functions "
                "of partial-update need sequence groups, not supported yet)"
            )
    if engine not in _KINDS:
        raise InvalidOptionError(
            f"option {MERGE_ENGINE!r} = {options[MERGE_ENGINE]!r} is not supported "
            f"(only {', '.join(repr(k) for k in _KINDS)})"
        )
    for key in (IGNORE_DELETE, REMOVE_RECORD_ON_DELETE):
        if key not in options:
            continue
        _flag(options, key)
        if engine != PARTIAL_UPDATE:
            raise InvalidOptionError(
                f"option {key!r} is supported with 'merge-engine' = 'partial-update' only"
            )
    if not primary_keys and (engine != DEDUPLICATE or SEQUENCE_FIELD in options):
        what = MERGE_ENGINE if engine != DEDUPLICATE else SEQUENCE_FIELD
        raise InvalidOptionError(f"option {what!r} needs a primary key")
    if engine != DEDUPLICATE and _flag(options, "deletion-vectors.enabled"):
        raise InvalidOptionError(
            "option 'deletion-vectors.enabled' is not supported with "
            f"'merge-engine' = '{engine}' yet"
        )
    _check_sequence(options, engine, primary_keys, row_type)
    _check_groups(options, engine, primary_keys, row_type)
    check_functions(options)
    if engine == AGGREGATION and row_type is not None:
        check_aggregation(options, row_type, primary_keys)


def _check_sequence(
    options: Mapping[str, str], engine: str, primary_keys: Sequence[str], row_type: RowType | None
) -> None:
    fields = sequence_fields(options)
    _descending(options)
    if not fields:
        return
    if engine == FIRST_ROW:
        raise InvalidOptionError(
            f"option {SEQUENCE_FIELD!r} cannot be used with 'merge-engine' = 'first-row' "
            "(Paimon refuses it too)"
        )
    if _flag(options, "deletion-vectors.enabled"):
        raise InvalidOptionError(
            f"option {SEQUENCE_FIELD!r} is not supported with deletion vectors yet"
        )
    if len(set(fields)) != len(fields):
        raise InvalidOptionError(f"option {SEQUENCE_FIELD!r}: a column is listed twice")
    if row_type is None:
        return
    for c in fields:
        if not c or not row_type.has(c):
            raise InvalidOptionError(
                f"option {SEQUENCE_FIELD!r}: no column {c!r} (columns: {', '.join(row_type.names)})"
            )
        t = row_type.field(c).type
        if t.root not in _SEQUENCE_ROOTS:
            raise InvalidOptionError(
                f"option {SEQUENCE_FIELD!r}: column {c!r} of type {t} is not supported "
                "(integers, decimals, strings, dates, timestamps)"
            )
        if f"fields.{c}.aggregate-function" in options:
            raise InvalidOptionError(
                f"option 'fields.{c}.aggregate-function': {c!r} is a sequence field "
                "(Paimon refuses an aggregation on it)"
            )


def _check_groups(
    options: Mapping[str, str], engine: str, primary_keys: Sequence[str], row_type: RowType | None
) -> None:
    groups = sequence_groups(options)
    if not groups:
        return
    if engine != PARTIAL_UPDATE:
        raise InvalidOptionError(
            "option 'fields.<column>.sequence-group' needs 'merge-engine' = 'partial-update'"
        )
    for what in (SEQUENCE_FIELD, REMOVE_RECORD_ON_DELETE):
        if what in options and (what != REMOVE_RECORD_ON_DELETE or _flag(options, what)):
            raise InvalidOptionError(
                f"option {what!r} together with sequence groups is not supported yet"
            )
    owner: dict[str, str] = {}
    for seq, fields in groups:
        name = ",".join(seq)
        for c in (*seq, *fields):
            if not c or (row_type is not None and not row_type.has(c)):
                raise InvalidOptionError(f"option 'fields.{name}.sequence-group': no column {c!r}")
            if c in primary_keys:
                raise InvalidOptionError(
                    f"option 'fields.{name}.sequence-group': {c!r} is a primary key column"
                )
        for c in fields:
            if c in owner and owner[c] != name:
                raise InvalidOptionError(
                    f"column {c!r} is in two sequence groups ({owner[c]!r}, {name!r})"
                )
            owner[c] = name
        if row_type is not None:
            for c in seq:
                t = row_type.field(c).type
                if t.root not in _SEQUENCE_ROOTS:
                    raise InvalidOptionError(
                        f"option 'fields.{name}.sequence-group': column {c!r} of type {t} "
                        "cannot order a group (integers, decimals, strings, dates, timestamps)"
                    )
