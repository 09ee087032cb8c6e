"""The file-index container (Paimon's ``FileIndexFormat``): every index of one data file.

Layout (big-endian; ``UTF`` = Java ``writeUTF``: u16 length + modified UTF-8)::

    +-------------------------------------------------------------------+
    | i64 MAGIC = 1493475289347502 | i32 version = 1 | i32 headLength     |
    +-------------------------------------------------------------------+
    | i32 columnCount                                                   |
    |   repeat columnCount:                                             |
    |     UTF columnName | i32 indexCount                               |
    |       repeat indexCount:                                          |
    |         UTF indexType | i32 startPos | i32 length                 |
    +-------------------------------------------------------------------+
    | i32 redundantLength | redundant bytes (0 when we write)           |
    +-------------------------------------------------------------------+
    | BODY: index payloads, concatenated                                |
    +-------------------------------------------------------------------+

``headLength`` counts everything before the body (magic included); ``startPos`` is absolute.
An index whose writer saw no rows is ``startPos = -1, length = 0`` (``EMPTY_INDEX_FLAG``).

>>> data = write_container({"id": {"bloom-filter": b"\\x00\\x01"}, "s": {"bitmap": None}})
>>> c = FileIndexContainer.decode(data)
>>> [(e.column, e.index_type, e.length) for e in c.entries]
[('id', 'bloom-filter', 2), ('s', 'bitmap', 0)]
>>> bytes(c.payload("id", "bloom-filter")), c.payload("s", "bitmap")
(b'\\x00\\x01', None)

A reader that fetches bytes by range (an ``.index`` file on an object store) reads the
fixed start (:data:`PREFIX` bytes give the header length), then the header
(:meth:`FileIndexContainer.decode_head`), then only the sections it needs
(:meth:`FileIndexContainer.ranges` merges adjacent ones into one read), handed over with
:meth:`FileIndexContainer.add_section`:

>>> h = FileIndexContainer.decode_head(data[: FileIndexContainer.head_length(data[:PREFIX])])
>>> h.loaded("id"), h.ranges(["id"])
(False, [(77, 2)])
>>> h.add_section(77, data[77:79]); bytes(h.payload("id", "bloom-filter"))
b'\\x00\\x01'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lakeskip.errors import CorruptIndexError
from lakeskip.index.primitives.binary import ByteReader, ByteWriter, encode_modified_utf8

__all__ = [
    "EMPTY_INDEX_FLAG",
    "MAGIC",
    "PREFIX",
    "VERSION",
    "ContainerEntry",
    "FileIndexContainer",
    "write_container",
]

MAGIC = 1493475289347502
VERSION = 1
EMPTY_INDEX_FLAG = -1
PREFIX = 16  # magic, version, headLength


@dataclass(frozen=True, slots=True)
class ContainerEntry:
    column: str
    index_type: str
    start: int  # absolute; -1 = EMPTY
    length: int


def write_container(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """Serialise ``column -> index type -> payload`` (``None`` = EMPTY), in mapping order."""
    head_len = 8 + 4 + 4 + 4 + 4  # magic, version, headLength, columnCount, redundantLength
    for column, by_type in indexes.items():
        head_len += 2 + len(encode_modified_utf8(column)) + 4
        for index_type in by_type:
            head_len += 2 + len(encode_modified_utf8(index_type)) + 8
    w = ByteWriter()
    w.i64(MAGIC)
    w.i32(VERSION)
    w.i32(head_len)
    w.i32(len(indexes))
    body = bytearray()
    for column, by_type in indexes.items():
        w.utf(column)
        w.i32(len(by_type))
        for index_type, payload in by_type.items():
            w.utf(index_type)
            if payload is None:
                w.i32(EMPTY_INDEX_FLAG)
                w.i32(0)
            else:
                w.i32(head_len + len(body))
                w.i32(len(payload))
                body += payload
    w.i32(0)  # redundant length
    assert len(w) == head_len, (len(w), head_len)
    w.raw(body)
    return w.getvalue()


class FileIndexContainer:
    """A decoded container: header parsed eagerly, payloads sliced on demand -- from the
    whole file (:meth:`decode`), or from the sections a ranged reader added
    (:meth:`decode_head`, :meth:`add_section`)."""

    def __init__(
        self, data: memoryview | None, entries: tuple[ContainerEntry, ...], head_len: int = 0
    ) -> None:
        self._data = data
        self.entries = entries
        self.head_len = head_len
        self._sections: dict[int, memoryview] = {}  # start -> payload (ranged reads)

    @staticmethod
    def head_length(prefix: bytes | bytearray | memoryview) -> int:
        """The header's length from the container's first :data:`PREFIX` bytes.

        Raises:
            CorruptIndexError: too short, wrong magic or version.
        """
        r = ByteReader(memoryview(prefix).cast("B"))
        magic = r.i64()
        if magic != MAGIC:
            raise CorruptIndexError(0, f"not a file index (magic {magic})")
        version = r.i32()
        if version != VERSION:
            raise CorruptIndexError(8, f"unsupported file index version {version}")
        head_len = r.i32()
        if head_len < 24:
            raise CorruptIndexError(12, f"header length {head_len} below 24")
        return head_len

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> FileIndexContainer:
        """Parse the header of a whole container.

        Raises:
            CorruptIndexError: wrong magic/version, truncated header, positions outside the data.
        """
        buf = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
        entries, head_len = _parse_head(buf, len(buf))
        return cls(buf, entries, head_len)

    @classmethod
    def decode_head(cls, head: bytes | bytearray | memoryview) -> FileIndexContainer:
        """Parse a header alone (``head``: the container's first ``headLength`` bytes);
        payloads come later through :meth:`add_section` (the file's size is unknown here:
        a section beyond its end shows as a short read).

        Raises:
            CorruptIndexError: as :meth:`decode`.
        """
        buf = memoryview(head).cast("B") if not isinstance(head, memoryview) else head
        entries, head_len = _parse_head(buf, None)
        return cls(None, entries, head_len)

    def columns(self) -> list[str]:
        return list(dict.fromkeys(e.column for e in self.entries))

    def index_types(self, column: str) -> list[str]:
        return [e.index_type for e in self.entries if e.column == column]

    def _stored(self, columns: Sequence[str]) -> list[ContainerEntry]:
        wanted = set(columns)
        return [e for e in self.entries if e.column in wanted and e.start != EMPTY_INDEX_FLAG]

    def loaded(self, column: str) -> bool:
        """Whether every payload of ``column`` can be sliced now."""
        return self._data is not None or all(
            e.start in self._sections for e in self._stored([column])
        )

    def ranges(self, columns: Sequence[str]) -> list[tuple[int, int]]:
        """(start, length) reads that fetch the payloads of ``columns`` not loaded yet,
        adjacent payloads in one read."""
        if self._data is not None:
            return []
        out: list[tuple[int, int]] = []
        for e in sorted(self._stored(columns), key=lambda e: e.start):
            if e.start in self._sections:
                continue
            if out and out[-1][0] + out[-1][1] == e.start:
                out[-1] = (out[-1][0], out[-1][1] + e.length)
            else:
                out.append((e.start, e.length))
        return out

    def add_section(self, start: int, data: bytes | memoryview, partial: bool = False) -> None:
        """Bytes read at absolute offset ``start``: every payload they hold becomes sliceable.

        Args:
            partial: ``data`` may end inside a payload (bytes read past the header), which
                then stays unloaded.

        Raises:
            CorruptIndexError: a payload starting in ``data`` runs past its end (a short read).
        """
        view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
        end = start + len(view)
        for e in self.entries:
            if e.start == EMPTY_INDEX_FLAG or not start <= e.start < end:
                continue
            if e.start + e.length > end:
                if partial:
                    continue
                raise CorruptIndexError(
                    e.start, f"index {e.column}/{e.index_type} runs past the end of the file"
                )
            self._sections[e.start] = view[e.start - start : e.start - start + e.length]

    @property
    def loaded_bytes(self) -> int:
        if self._data is not None:
            return len(self._data)
        return self.head_len + sum(len(v) for v in self._sections.values())

    def payload(self, column: str, index_type: str) -> memoryview | None:
        """The index bytes, ``None`` for an EMPTY index. KeyError if absent (or not loaded)."""
        for e in self.entries:
            if e.column == column and e.index_type == index_type:
                if e.start == EMPTY_INDEX_FLAG:
                    return None
                if self._data is None:
                    return self._sections[e.start]
                return self._data[e.start : e.start + e.length]
        raise KeyError(f"{column}/{index_type}")

    def loaded_payload(self, e: ContainerEntry) -> memoryview | None:
        """``e``'s index bytes if they can be sliced now (``None``: EMPTY, or not loaded)."""
        if e.start == EMPTY_INDEX_FLAG:
            return None
        if self._data is None:
            return self._sections.get(e.start)
        return self._data[e.start : e.start + e.length]

    def to_mapping(self) -> dict[str, dict[str, bytes | None]]:
        out: dict[str, dict[str, bytes | None]] = {}
        for e in self.entries:
            p = self.payload(e.column, e.index_type)
            out.setdefault(e.column, {})[e.index_type] = None if p is None else bytes(p)
        return out


def _parse_head(buf: memoryview, size: int | None) -> tuple[tuple[ContainerEntry, ...], int]:
    """The entries and header length; positions checked against ``size`` when known."""
    r = ByteReader(buf)
    magic = r.i64()
    if magic != MAGIC:
        raise CorruptIndexError(0, f"not a file index (magic {magic})")
    version = r.i32()
    if version != VERSION:
        raise CorruptIndexError(8, f"unsupported file index version {version}")
    head_len = r.i32()
    if not 24 <= head_len <= len(buf):
        raise CorruptIndexError(12, f"header length {head_len} outside 24..{len(buf)}")
    limit = size if size is not None else 2**31 - 1
    n_cols = r.i32()
    if not 0 <= n_cols <= head_len:
        raise CorruptIndexError(16, f"bad column count {n_cols}")
    entries = []
    for _ in range(n_cols):
        column = r.utf()
        n_idx = r.i32()
        if not 0 <= n_idx <= head_len:
            raise CorruptIndexError(r.pos - 4, f"bad index count {n_idx}")
        for _ in range(n_idx):
            index_type = r.utf()
            at = r.pos
            start, length = r.i32(), r.i32()
            if start == EMPTY_INDEX_FLAG:
                if length != 0:
                    raise CorruptIndexError(at, "EMPTY index with a length")
            elif start < head_len or length < 0 or start + length > limit:
                raise CorruptIndexError(
                    at, f"index {column}/{index_type} at {start}+{length} outside the body"
                )
            entries.append(ContainerEntry(column, index_type, start, length))
    redundant = r.i32()
    if redundant < 0:
        raise CorruptIndexError(r.pos - 4, f"negative redundant length {redundant}")
    r.skip(redundant)
    if r.pos != head_len:
        raise CorruptIndexError(r.pos, f"header ends at {r.pos}, headLength says {head_len}")
    end = head_len
    for e in sorted((e for e in entries if e.start != EMPTY_INDEX_FLAG), key=lambda e: e.start):
        if e.start < end:
            raise CorruptIndexError(e.start, f"index {e.column}/{e.index_type} overlaps")
        end = e.start + e.length
    return tuple(entries), head_len
