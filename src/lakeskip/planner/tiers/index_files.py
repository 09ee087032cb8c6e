"""Tiers 3 and 4's reads: a file's embedded index container or its ``.index`` file opened,
and the verdict of an opened one.

An ``.index`` file is read by range: the header, then only the sections of the predicate's
columns, adjacent sections in one read. Opened containers are kept in the process-wide
metadata cache: ``.index`` files by path (index files are immutable: a rewrite writes a new
name), holding the header and the sections queries have needed so far; embedded containers
by the file and the exact index bytes (a rewrite gives new bytes, hence a new entry); their
readers decode lazily and keep what they decoded.

A corrupt, missing or unreadable index, or one whose column no longer matches the table's
schema, means "keep the file" and a warning -- never a failed query, never a skipped match.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lakeskip.catalog.cache import CacheSection, MetadataCache
from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.table import FileStoreTable
from lakeskip.expressions.visitors import referenced_names
from lakeskip.index.file_index import FileIndexFile
from lakeskip.index.format import PREFIX, FileIndexContainer
from lakeskip.planner.index_evaluator import IndexVerdict, evaluate_file_index, evaluate_window
from lakeskip.planner.report import FileDecision, SkipTier
from lakeskip.planner.tiers.notes import PlanNotes
from lakeskip.types import RowType

__all__ = ["IndexFiles"]

_HEAD_READ = 256  # first read of an .index file: a header of a few columns (more: a second read)
_INDEX_FILES = "planner.index-containers"
_INDEX_DECODED_FACTOR = 3  # decoded readers (pyroaring C memory) beside the bytes


class IndexFiles:
    """Opens and evaluates the file indexes of one table's data files.

    Args:
        table: the table whose files these are.
        cache: where opened containers are kept between queries.
        max_workers: threads reading ``.index`` files.
    """

    def __init__(self, table: FileStoreTable, cache: MetadataCache, max_workers: int) -> None:
        self.table = table
        self.max_workers = max_workers
        self._opened: CacheSection[FileIndexFile] = cache.section(_INDEX_FILES)

    def embedded_decision(
        self,
        e: ManifestEntry,
        data: bytes | memoryview,
        bound: Any,
        tier: SkipTier,
        notes: PlanNotes,
    ) -> FileDecision:
        """The verdict of an embedded index container (small: cached by its bytes' hash)."""
        table = self.table
        raw = bytes(data)
        key = (table.path, e.file.file_name, e.file.schema_id, table.schema.id, hash(raw), len(raw))
        try:
            index = self._opened.get(key)
            if index is None:
                index = FileIndexFile.from_bytes(raw, *self._index_row_type(e), e.file.row_count)
                self._opened.put(key, index, _INDEX_DECODED_FACTOR * len(raw))
        except Exception as err:  # corrupt or unreadable: keep the file, say so once
            self._unusable(e, err, notes)
            return FileDecision(e, keep=True)
        return self.decision(e, index, bound, tier, notes)

    def decision(
        self, e: ManifestEntry, index: FileIndexFile, bound: Any, tier: SkipTier, notes: PlanNotes
    ) -> FileDecision:
        """The verdict of ``e``'s opened index ``index`` on ``bound``, skipping by ``tier``."""
        try:
            verdict: IndexVerdict = evaluate_file_index(bound, index)
        except Exception as err:  # corrupt or unreadable: keep the file, say so once
            self._unusable(e, err, notes)
            return FileDecision(e, keep=True)
        for msg in verdict.warnings:
            notes.add(f"{self.table.identifier}: {e.file.file_name}: {msg}")
        if verdict.skip:
            return FileDecision(
                e, keep=False, tier=tier, index_type=verdict.index_type, column=verdict.column
            )
        return FileDecision(e, keep=True, rows=verdict.rows)

    def window_matches(self, index: FileIndexFile, bound: Any) -> int:
        """How many of the file's first 65,536 rows its indexes say ``bound`` may match,
        reading only those rows' part of each bitmap (:func:`evaluate_window`); 0 when
        they cannot tell that way (or the index is unreadable: :meth:`decision` then reads
        it whole and warns). A count above 0 is a proof the whole evaluation keeps the
        file."""
        try:
            rows = evaluate_window(bound, index)
        except Exception:  # corrupt: left to decision(), which keeps the file and says so
            return 0
        return 0 if rows is None else len(rows)

    def open_all(
        self, entries: Sequence[ManifestEntry], bound: Any, notes: PlanNotes
    ) -> list[tuple[FileIndexFile | None, int]]:
        """:meth:`_open` for each of ``entries``; reads in parallel threads."""
        if not entries:
            return []
        names = sorted(referenced_names(bound))
        table = self.table
        # Warm queries find every index (and the sections they need) in the cache: answer
        # those here, and start threads only for the misses (a pool per query cost more
        # than the planning it served).
        out: list[tuple[FileIndexFile | None, int]] = []
        missing: list[int] = []
        for i, e in enumerate(entries):
            path = f"{table.data_file_dir(e)}/{e.file.index_file_name}"
            key = (table.path, e.file.file_name, e.file.schema_id, table.schema.id, path)
            hit = self._opened.get(key)
            if hit is not None and all(hit.container.loaded(n) for n in names):
                out.append(self._open(e, names, notes))
            else:
                out.append((None, 0))
                missing.append(i)
        if len(missing) == 1 or (missing and table.file_io.is_local):
            # a local file's ranges come from the page cache in well under a millisecond:
            # threads would only add their start and hand-offs (each a wait for a core on a
            # busy machine: 30-130 ms of a 12-file plan whose reads took 3 ms)
            for i in missing:
                out[i] = self._open(entries[i], names, notes)
        elif missing:
            with ThreadPoolExecutor(max_workers=min(self.max_workers, len(missing))) as pool:
                got = pool.map(lambda i: self._open(entries[i], names, notes), missing)
                for i, opened in zip(missing, got, strict=True):
                    out[i] = opened
        return out

    def _open(
        self, e: ManifestEntry, names: Sequence[str], notes: PlanNotes
    ) -> tuple[FileIndexFile | None, int]:
        """``e``'s ``.index`` file opened with the sections of the index columns ``names``
        loaded, and the index bytes this used (fetched now, or held in the cache: the
        header and those sections). Only the header and those sections are read, by range,
        adjacent sections in one read; the opened container is cached by path (index files
        are immutable: a rewrite writes a new name) and later queries fetch only sections
        it lacks. ``None``: unreadable or corrupt (warned; the file is kept)."""
        table = self.table
        name = e.file.index_file_name
        assert name is not None
        path = f"{table.data_file_dir(e)}/{name}"
        key = (table.path, e.file.file_name, e.file.schema_id, table.schema.id, path)
        io = table.file_io
        fetched = 0
        try:
            index = self._opened.get(key)
            if index is None:
                first = io.read_range(path, 0, _HEAD_READ)
                fetched += len(first)
                head_len = FileIndexContainer.head_length(first[:PREFIX])
                if head_len > len(first):
                    rest = io.read_range(path, len(first), head_len - len(first))
                    fetched += len(rest)
                    first += rest
                container = FileIndexContainer.decode_head(first[:head_len])
                container.add_section(head_len, first[head_len:], partial=True)
                index = FileIndexFile(container, *self._index_row_type(e), e.file.row_count)
            container = index.container
            stored = set(container.columns())
            wanted = [s for s in map(index.stored_name, names) if s in stored]
            for start, length in container.ranges(wanted):
                data = io.read_range(path, start, length)
                fetched += len(data)
                container.add_section(start, data)
            self._opened.put(key, index, _INDEX_DECODED_FACTOR * container.loaded_bytes)
        except OSError as err:
            notes.add(f"{table.identifier}: cannot read index file {name} ({err}); file kept")
            return None, fetched
        except Exception as err:  # corrupt: keep the file, say so once
            self._unusable(e, err, notes)
            return None, fetched
        used = container.head_len + sum(
            en.length for en in container.entries if en.column in wanted and en.start >= 0
        )
        return index, max(fetched, used)

    def _index_row_type(self, e: ManifestEntry) -> tuple[RowType, dict[str, str]]:
        """Columns of the file's schema that still hold the same values in the table's
        schema (same field id and type: a renamed column's index still answers under its new
        name, a retyped one's does not), and the names their index has in the file where
        they were renamed since."""
        table = self.table
        if e.file.schema_id == table.schema.id:
            return table.schema.row_type, {}
        file_schema = table.schema_by_id(e.file.schema_id)
        current = {f.id: f for f in table.schema.row_type}
        same = [
            (current[f.id], f.name)
            for f in file_schema.row_type
            if f.id in current
            and current[f.id].type.with_nullable(True) == f.type.with_nullable(True)
        ]
        renamed = {now.name: stored for now, stored in same if now.name != stored}
        return RowType(tuple(now for now, _ in same)), renamed

    def _unusable(self, e: ManifestEntry, err: Exception, notes: PlanNotes) -> None:
        notes.add(
            f"{self.table.identifier}: file index of {e.file.file_name} unusable "
            f"({type(err).__name__}: {err}); file kept"
        )
