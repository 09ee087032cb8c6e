"""Sort keys for sort compaction: Paimon-compatible z-order and Hilbert keys, plain ordering.

Pure and vectorised (numpy/pyarrow), no Spark. See :mod:`lakeskip.sort.zorder`,
:mod:`lakeskip.sort.hilbert` and :mod:`lakeskip.sort.order`.
"""

from __future__ import annotations

from lakeskip.sort.hilbert import (
    BITS_PER_DIMENSION,
    KEY_BYTES,
    hilbert_column_longs,
    hilbert_index_matrix,
    hilbert_keys,
    hilbert_transpose,
)
from lakeskip.sort.order import (
    HILBERT,
    ORDER,
    SORT_STRATEGIES,
    ZORDER,
    sort_indices,
    sort_keys,
    sortable,
    validate_sort_columns,
    validate_strategy,
)
from lakeskip.sort.zorder import (
    DEFAULT_VAR_LENGTH_CONTRIBUTION,
    PRIMITIVE_BUFFER_SIZE,
    interleave_bits,
    zorder_column_bytes,
    zorder_key_size,
    zorder_keys,
)

__all__ = [
    "BITS_PER_DIMENSION",
    "DEFAULT_VAR_LENGTH_CONTRIBUTION",
    "HILBERT",
    "KEY_BYTES",
    "ORDER",
    "PRIMITIVE_BUFFER_SIZE",
    "SORT_STRATEGIES",
    "ZORDER",
    "hilbert_column_longs",
    "hilbert_index_matrix",
    "hilbert_keys",
    "hilbert_transpose",
    "interleave_bits",
    "sort_indices",
    "sort_keys",
    "sortable",
    "validate_sort_columns",
    "validate_strategy",
    "zorder_column_bytes",
    "zorder_key_size",
    "zorder_keys",
]
