"""The ``bitmap`` file index: :mod:`.file_index` (layouts, reader, indexer), :mod:`.writer`
(V1 and V2 writers over one shared layout) and :mod:`.keys` (keys in Java's terms)."""

from lakeskip.index.bitmap.file_index import VERSION_1, VERSION_2, BitmapIndexer

__all__ = ["VERSION_1", "VERSION_2", "BitmapIndexer"]
