"""The ``range-bitmap`` file index, split as Paimon splits it: :mod:`.file_index` (the format
and its reader and writer), :mod:`.keys` (key codecs and Java's key order),
:mod:`.dictionary` (the chunked dictionary) and :mod:`.bit_slice` (the codes, bit-sliced)."""

from lakeskip.index.range_bitmap.file_index import DEFAULT_CHUNK_SIZE, RangeBitmapIndexer

__all__ = ["DEFAULT_CHUNK_SIZE", "RangeBitmapIndexer"]
