"""Table clustering (``clustering.*`` options): which columns, which curve.

Paimon's options (``CoreOptions``): ``clustering.columns`` (fallback key
``sink.clustering.by-columns``), ``clustering.strategy`` = ``auto`` | ``order`` | ``zorder`` |
``hilbert`` -- ``auto`` picks ``order`` for one column, ``zorder`` for 2-4, ``hilbert`` for 5
or more -- and ``clustering.incremental``. lakeskip's own ``sort.curve-keys`` picks the curve's
keys: ``rank`` (default: each column by its rank in a sample, :mod:`lakeskip.sort.ranked`) or
``paimon`` (Paimon's raw-byte keys, its exact layout).

>>> from lakeskip import types as T
>>> rt = T.RowType.of(("a", T.INT), ("b", T.BIGINT), ("m", T.map_of(T.STRING, T.STRING)))
>>> clustering_from_options({"clustering.columns": "a,b"}, rt)
ClusteringSpec(strategy='zorder', columns=('a', 'b'), var_length_contribution=8, incremental=False, curve_keys='rank')
>>> clustering_from_options({}, rt) is None
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lakeskip.errors import InvalidOptionError
from lakeskip.sort.order import validate_sort_columns
from lakeskip.sort.ranked import PAIMON_KEYS, RANK_KEYS
from lakeskip.types import RowType

__all__ = [
    "COLUMNS",
    "CURVE_KEYS",
    "INCREMENTAL",
    "STRATEGY",
    "ClusteringSpec",
    "clustering_from_options",
    "curve_keys_from_options",
]

COLUMNS = "clustering.columns"
COLUMNS_FALLBACK = "sink.clustering.by-columns"
STRATEGY = "clustering.strategy"
INCREMENTAL = "clustering.incremental"
VAR_LENGTH = "zorder.var-length-contribution"
CURVE_KEYS = "sort.curve-keys"


@dataclass(frozen=True, slots=True)
class ClusteringSpec:
    strategy: str  # order | zorder | hilbert (auto resolved)
    columns: tuple[str, ...]
    var_length_contribution: int = 8
    incremental: bool = False
    curve_keys: str = RANK_KEYS


def curve_keys_from_options(options: Mapping[str, str]) -> str:
    """``sort.curve-keys``: ``rank`` (default) or ``paimon``.

    >>> curve_keys_from_options({}), curve_keys_from_options({"sort.curve-keys": "PAIMON"})
    ('rank', 'paimon')
    """
    value = options.get(CURVE_KEYS, RANK_KEYS).strip().lower()
    if value not in (RANK_KEYS, PAIMON_KEYS):
        raise InvalidOptionError(f"option {CURVE_KEYS!r} = {value!r}: use rank or paimon")
    return value


def clustering_from_options(
    options: Mapping[str, str], row_type: RowType, partition_keys: Sequence[str] = ()
) -> ClusteringSpec | None:
    """The table's clustering, or ``None``. Raises typed errors for bad columns/strategies."""
    raw = options.get(COLUMNS) or options.get(COLUMNS_FALLBACK)
    if not raw or not raw.strip():
        return None
    names = tuple(c.strip() for c in raw.split(",") if c.strip())
    strategy = options.get(STRATEGY, "auto").strip().lower()
    if strategy == "auto":
        strategy = "order" if len(names) == 1 else "zorder" if len(names) <= 4 else "hilbert"
    if strategy not in ("order", "zorder", "hilbert"):
        raise InvalidOptionError(
            f"option {STRATEGY!r} = {strategy!r}: use auto, order, zorder or hilbert"
        )
    fields = validate_sort_columns(row_type, names, partition_keys, strategy)
    incremental = options.get(INCREMENTAL, "false").strip().lower() == "true"
    var_len = int(options.get(VAR_LENGTH, "8"))
    curve = curve_keys_from_options(options)
    return ClusteringSpec(strategy, tuple(f.name for f in fields), var_len, incremental, curve)
