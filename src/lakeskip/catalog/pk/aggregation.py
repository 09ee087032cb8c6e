"""The aggregation merge engine (``merge-engine = aggregation``): Paimon 0.9's field aggregators.

Each value column has a function (``fields.<c>.aggregate-function``, else
``fields.default-aggregate-function``, else ``last_non_null_value``); primary-key columns take
the newest input (Paimon's ``FieldPrimaryKeyAgg``). The versions of a key are folded oldest
first from an all-NULL accumulator, ``+I``/``+U`` versions by ``agg``, ``-U``/``-D`` versions
by ``retract`` (Paimon's ``AggregateMergeFunction``); a key with one version keeps that version
as it is, kind included (``ReducerMergeFunctionWrapper``), so a lone retract means "no row".
The rules per function, from Paimon 0.9's ``Field*Agg`` classes (``acc``: the accumulator,
``x``: the version's value)::

    function              agg(acc, x)                         retract(acc, x)
    sum                   acc+x; a NULL side: the other       acc-x; acc NULL: -x; x NULL: acc
    product               acc*x; a NULL side: the other       acc/x; a NULL side: acc
    max / min             the larger / smaller; NULL: other   refused
    last_value            x                                   NULL
    last_non_null_value   x unless NULL, else acc             x non-NULL: NULL, else acc
    first_value           the first version's x (NULL too)    refused
    first_non_null_value  the first non-NULL x                refused
    bool_and / bool_or    acc AND / OR x; NULL: the other     refused
    listagg               acc <delimiter> x; NULL: other      refused

``fields.<c>.ignore-retract = true`` makes ``retract`` keep ``acc``. "Refused" reads fail
(:data:`RETRACT_ERROR`) as Paimon's do. Integer sums and products that overflow fail
(:data:`OVERFLOW_ERROR`, Paimon's ``ArithmeticException``); a DECIMAL result wider than the
column's precision is NULL (Paimon's ``Decimal.fromBigDecimal``); FLOAT arithmetic rounds to
32 bits at every step.

This is the one Python copy of the rules; Java's ``LakePkScan`` has the other, checked
against the same cases (``tests/cases/pk_merge_cases.json``).
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lakeskip.errors import CorruptMetadataError, InvalidArgumentError, InvalidOptionError
from lakeskip.types import RowType, TypeRoot

__all__ = [
    "DEFAULT_FUNCTION",
    "FUNCTIONS",
    "OVERFLOW_ERROR",
    "RETRACT_ERROR",
    "VALUE_PRESERVING",
    "FieldAgg",
    "check_aggregation",
    "check_functions",
    "field_aggs",
    "fold",
]

PRIMARY_KEY = "primary-key"  # not a user function: the newest input (FieldPrimaryKeyAgg)
DEFAULT_FUNCTION = "last_non_null_value"
_NUMERIC = frozenset(
    {
        TypeRoot.TINYINT,
        TypeRoot.SMALLINT,
        TypeRoot.INT,
        TypeRoot.BIGINT,
        TypeRoot.FLOAT,
        TypeRoot.DOUBLE,
        TypeRoot.DECIMAL,
    }
)
_ORDERED = _NUMERIC | {
    TypeRoot.STRING,
    TypeRoot.DATE,
    TypeRoot.TIMESTAMP,
    TypeRoot.TIMESTAMP_LTZ,
    TypeRoot.BOOLEAN,
}
# function -> the column types it takes (None: any)
FUNCTIONS: dict[str, frozenset[TypeRoot] | None] = {
    "sum": _NUMERIC,
    "product": _NUMERIC,
    "max": _ORDERED,
    "min": _ORDERED,
    "last_value": None,
    "last_non_null_value": None,
    "first_value": None,
    "first_non_null_value": None,
    "bool_and": frozenset({TypeRoot.BOOLEAN}),
    "bool_or": frozenset({TypeRoot.BOOLEAN}),
    "listagg": frozenset({TypeRoot.STRING}),
}
# functions whose result is always a value some version of the key holds in the column (NULL
# included): the planner may prune an aggregation table by such a column (lakeskip.planner)
VALUE_PRESERVING = frozenset(
    {"max", "min", "first_value", "first_non_null_value", "bool_and", "bool_or"}
)
_ALIASES = {"first_not_null_value": "first_non_null_value"}  # Paimon's legacy name
_NOT_YET = {
    "count": "Paimon removed it in 0.9",
    "collect": "not implemented yet",
    "merge_map": "not implemented yet",
    "nested_update": "not implemented yet",
    "hll_sketch": "not implemented yet",
    "theta_sketch": "not implemented yet",
    "rbm32": "not implemented yet",
    "rbm64": "not implemented yet",
}
_INT_BITS = {TypeRoot.TINYINT: 8, TypeRoot.SMALLINT: 16, TypeRoot.INT: 32, TypeRoot.BIGINT: 64}

RETRACT_ERROR = (
    "aggregate function '{function}' of column '{column}' does not support retraction "
    "(a -U/-D version of a key; 'fields.{column}.ignore-retract' = 'true' skips them)"
)
OVERFLOW_ERROR = "aggregate function '{function}' of column '{column}' overflows {type}"


@dataclass(frozen=True, slots=True)
class FieldAgg:
    """The aggregation of one column."""

    column: str
    function: str
    ignore_retract: bool = False
    delimiter: str = ","
    type_name: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "function": self.function,
            "ignore_retract": self.ignore_retract,
            "delimiter": self.delimiter,
        }


def _function(options: Mapping[str, str], column: str) -> str:
    raw = options.get(f"fields.{column}.aggregate-function")
    if raw is None:
        raw = options.get("fields.default-aggregate-function", DEFAULT_FUNCTION)
    name = str(raw).strip().lower()
    return _ALIASES.get(name, name)


def _bool(options: Mapping[str, str], key: str) -> bool:
    raw = str(options.get(key, "false")).strip().lower()
    if raw not in ("true", "false"):
        raise InvalidOptionError(f"option {key!r} = {options[key]!r}: expected true or false")
    return raw == "true"


def field_aggs(
    options: Mapping[str, str], row_type: RowType, primary_keys: Sequence[str]
) -> tuple[FieldAgg, ...]:
    """The aggregation of every column of a (validated) aggregation table."""
    out = []
    for f in row_type:
        if f.name in primary_keys:
            out.append(FieldAgg(f.name, PRIMARY_KEY))
            continue
        out.append(
            FieldAgg(
                f.name,
                _function(options, f.name),
                _bool(options, f"fields.{f.name}.ignore-retract"),
                str(options.get(f"fields.{f.name}.list-agg-delimiter", ",")),
                str(f.type),
            )
        )
    return tuple(out)


def check_aggregation(
    options: Mapping[str, str], row_type: RowType, primary_keys: Sequence[str]
) -> None:
    """Validate the aggregation options against the columns.

    Raises:
        InvalidOptionError: an unknown or unsupported function (named), a function on a
            column type it does not take, an option naming an unknown column, a function on
            a primary-key column, a malformed ``ignore-retract``.
    """
    names = set(row_type.names)
    for key in options:
        if not key.startswith("fields.") or key == "fields.default-aggregate-function":
            continue
        for suffix in (".aggregate-function", ".ignore-retract", ".list-agg-delimiter"):
            if key.endswith(suffix):
                column = key[len("fields.") : -len(suffix)]
                if column not in names:
                    raise InvalidOptionError(f"option {key!r}: no column {column!r}")
                if column in primary_keys and suffix == ".aggregate-function":
                    raise InvalidOptionError(
                        f"option {key!r}: primary key column {column!r} is not aggregated"
                    )
    check_functions(options)
    for agg in field_aggs(options, row_type, primary_keys):
        if agg.function == PRIMARY_KEY:
            continue
        _known(agg.function, agg.column)
        takes = FUNCTIONS[agg.function]
        root = row_type.field(agg.column).type.root
        if takes is not None and root not in takes:
            raise InvalidOptionError(
                f"aggregate function '{agg.function}' does not take column '{agg.column}' "
                f"of type {row_type.field(agg.column).type}"
            )


def check_functions(options: Mapping[str, str]) -> None:
    """Every function an option names is one lakeskip implements.

    Raises:
        InvalidOptionError: an unknown or unsupported function, named.
    """
    for key, value in options.items():
        if key == "fields.default-aggregate-function":
            column = "default"
        elif key.startswith("fields.") and key.endswith(".aggregate-function"):
            column = key[len("fields.") : -len(".aggregate-function")]
        else:
            continue
        name = str(value).strip().lower()
        _known(_ALIASES.get(name, name), column)


def _known(function: str, column: str) -> None:
    if function in FUNCTIONS:
        return
    if function in _NOT_YET:
        raise InvalidOptionError(
            f"aggregate function '{function}' (column '{column}') is not supported "
            f"({_NOT_YET[function]})"
        )
    raise InvalidOptionError(
        f"unknown aggregate function '{function}' (column '{column}'; supported: "
        f"{', '.join(sorted(FUNCTIONS))})"
    )


Fold = Callable[[list[Any], list[bool]], Any]


def fold(agg: FieldAgg, root: TypeRoot, precision: int, scale: int) -> Fold:
    """The fold of one column over a key's versions (values oldest first, with each
    version's "is a retract" flag): Paimon's ``agg``/``retract`` applied in order from NULL."""
    fn = agg.function
    if fn == PRIMARY_KEY:
        return lambda values, _retract: values[-1]

    def refuse(acc: Any, x: Any) -> Any:
        raise CorruptMetadataError(RETRACT_ERROR.format(function=fn, column=agg.column))

    def overflow() -> InvalidArgumentError:
        return InvalidArgumentError(
            OVERFLOW_ERROR.format(function=fn, column=agg.column, type=agg.type_name)
        )

    arith = _Arith(root, precision, scale, overflow)
    add: Callable[[Any, Any], Any]
    sub: Callable[[Any, Any], Any] = refuse
    first = False
    if fn == "sum":

        def add(acc: Any, x: Any) -> Any:
            return x if acc is None else acc if x is None else arith.add(acc, x)

        def sub(acc: Any, x: Any) -> Any:
            if acc is None:
                return None if x is None else arith.neg(x)
            return acc if x is None else arith.sub(acc, x)

    elif fn == "product":

        def add(acc: Any, x: Any) -> Any:
            return x if acc is None else acc if x is None else arith.mul(acc, x)

        def sub(acc: Any, x: Any) -> Any:
            return acc if acc is None or x is None else arith.div(acc, x)

    elif fn in ("max", "min"):
        bigger = fn == "max"

        def add(acc: Any, x: Any) -> Any:
            if acc is None or x is None:
                return x if acc is None else acc
            if bigger:  # FieldMaxAgg / FieldMinAgg, as written
                return x if _cmp(acc, x) < 0 else acc
            return acc if _cmp(acc, x) < 0 else x

    elif fn == "last_value":

        def add(acc: Any, x: Any) -> Any:
            return x

        def sub(acc: Any, x: Any) -> Any:
            return None

    elif fn == "last_non_null_value":

        def add(acc: Any, x: Any) -> Any:
            return acc if x is None else x

        def sub(acc: Any, x: Any) -> Any:
            return None if x is not None else acc

    elif fn in ("first_value", "first_non_null_value"):
        first = True
        add = refuse  # replaced below: the first takes state
    elif fn in ("bool_and", "bool_or"):
        is_and = fn == "bool_and"

        def add(acc: Any, x: Any) -> Any:
            if acc is None or x is None:
                return x if acc is None else acc
            return bool(acc and x) if is_and else bool(acc or x)

    elif fn == "listagg":
        delim = agg.delimiter

        def add(acc: Any, x: Any) -> Any:
            return x if acc is None else acc if x is None else f"{acc}{delim}{x}"

    else:  # pragma: no cover - validated at CREATE TABLE
        raise InvalidOptionError(f"unknown aggregate function '{fn}'")
    if agg.ignore_retract:
        sub = lambda acc, x: acc  # noqa: E731
    non_null = fn == "first_non_null_value"

    def run(values: list[Any], retracts: list[bool]) -> Any:
        acc: Any = None
        started = False
        for x, r in zip(values, retracts, strict=True):
            if r:
                acc = sub(acc, x)
            elif first:
                if not started and (x is not None or not non_null):
                    acc, started = x, True
            else:
                acc = add(acc, x)
        return acc

    return run


def _cmp(a: Any, b: Any) -> int:
    """Java's ``compare`` of two non-NULL values (NaN largest, as ``Double.compare``)."""
    if isinstance(a, float) and isinstance(b, float) and (math.isnan(a) or math.isnan(b)):
        return int(math.isnan(a)) - int(math.isnan(b))
    return int(a > b) - int(a < b)


class _Arith:
    """Paimon's arithmetic on one column type (exact integers, 32-bit FLOAT, DECIMAL(p, s))."""

    def __init__(
        self, root: TypeRoot, precision: int, scale: int, overflow: Callable[[], Exception]
    ) -> None:
        self.root = root
        self.precision = precision
        self.scale = scale
        self.overflow = overflow
        bits = _INT_BITS.get(root)
        self.bounds = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if bits else None

    def _fit(self, v: Any) -> Any:
        if self.bounds is not None:
            if not self.bounds[0] <= v <= self.bounds[1]:
                raise self.overflow()
            return int(v)
        if self.root == TypeRoot.FLOAT:
            return float(np.float32(v))
        if self.root == TypeRoot.DOUBLE:
            return float(v)
        if self.root == TypeRoot.DECIMAL:
            q = decimal.Decimal(v).quantize(
                decimal.Decimal(1).scaleb(-self.scale),
                rounding=decimal.ROUND_HALF_UP,
                context=decimal.Context(prec=200),
            )
            return None if len(q.as_tuple().digits) > self.precision and q != 0 else q
        return v

    def _f32(self, v: Any) -> Any:
        if self.root == TypeRoot.FLOAT:
            return np.float32(v)
        return np.float64(v) if self.root == TypeRoot.DOUBLE else v

    def add(self, a: Any, b: Any) -> Any:
        with decimal.localcontext(decimal.Context(prec=200)):
            return self._fit(self._f32(a) + self._f32(b))

    def sub(self, a: Any, b: Any) -> Any:
        with decimal.localcontext(decimal.Context(prec=200)):
            return self._fit(self._f32(a) - self._f32(b))

    def neg(self, a: Any) -> Any:
        return self._fit(-a)

    def mul(self, a: Any, b: Any) -> Any:
        with decimal.localcontext(decimal.Context(prec=200)):
            return self._fit(self._f32(a) * self._f32(b))

    def div(self, a: Any, b: Any) -> Any:
        if self.bounds is not None:
            if b == 0:
                raise self.overflow()
            q = abs(a) // abs(b)  # Java truncates toward zero
            return self._fit(q if (a >= 0) == (b >= 0) else -q)
        if self.root == TypeRoot.DECIMAL:
            with decimal.localcontext(decimal.Context(prec=200)):
                return self._fit(decimal.Decimal(a) / decimal.Decimal(b))
        with np.errstate(all="ignore"):  # Java: x/0.0 is +-Infinity or NaN
            return self._fit(self._f32(a) / self._f32(b))
