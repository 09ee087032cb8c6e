"""What a file index says about a predicate: REMAIN, SKIP, or exactly these rows.

Combination follows Paimon's ``FileIndexResult`` / ``BitmapIndexResult`` exactly:

=================  =====================  ======================
left \\ op          ``and_(x)``            ``or_(x)``
=================  =====================  ======================
REMAIN             ``x``                  REMAIN
SKIP               SKIP                   ``x``
Bitmap(b)          Bitmap(b & x.b) if x   Bitmap(b | x.b) if x
                   is a bitmap; else b    is a bitmap; else
                   if x remains; else     REMAIN if x remains;
                   SKIP                   else b
=================  =====================  ======================

A bitmap result "remains" iff its bitmap is non-empty. Bitmaps hold 0-based row positions
inside one data file.

Example:
    >>> from pyroaring import BitMap
    >>> REMAIN.and_(SKIP) is SKIP
    True
    >>> BitmapResult(BitMap([1, 2])).and_(BitmapResult(BitMap([2, 3]))).bitmap
    BitMap([2])
"""

from __future__ import annotations

from dataclasses import dataclass

from pyroaring import BitMap

__all__ = ["REMAIN", "SKIP", "BitmapResult", "FileIndexResult"]


class FileIndexResult:
    """Base of the three kinds of answer. Use :data:`REMAIN`, :data:`SKIP`, :class:`BitmapResult`."""

    __slots__ = ()

    def remain(self) -> bool:
        raise NotImplementedError

    def and_(self, other: FileIndexResult) -> FileIndexResult:
        raise NotImplementedError

    def or_(self, other: FileIndexResult) -> FileIndexResult:
        raise NotImplementedError


class _Remain(FileIndexResult):
    __slots__ = ()

    def remain(self) -> bool:
        return True

    def and_(self, other: FileIndexResult) -> FileIndexResult:
        return other

    def or_(self, other: FileIndexResult) -> FileIndexResult:
        return self

    def __repr__(self) -> str:
        return "REMAIN"


class _Skip(FileIndexResult):
    __slots__ = ()

    def remain(self) -> bool:
        return False

    def and_(self, other: FileIndexResult) -> FileIndexResult:
        return self

    def or_(self, other: FileIndexResult) -> FileIndexResult:
        return other

    def __repr__(self) -> str:
        return "SKIP"


REMAIN: FileIndexResult = _Remain()
SKIP: FileIndexResult = _Skip()


@dataclass(frozen=True, slots=True, eq=False)
class BitmapResult(FileIndexResult):
    """Exactly these rows (of one data file) may match."""

    bitmap: BitMap

    def remain(self) -> bool:
        return len(self.bitmap) > 0

    def and_(self, other: FileIndexResult) -> FileIndexResult:
        if isinstance(other, BitmapResult):
            return BitmapResult(self.bitmap & other.bitmap)
        return self if other.remain() else SKIP

    def or_(self, other: FileIndexResult) -> FileIndexResult:
        if isinstance(other, BitmapResult):
            return BitmapResult(self.bitmap | other.bitmap)
        return REMAIN if other.remain() else self

    def __repr__(self) -> str:
        n = len(self.bitmap)
        return f"BitmapResult({n} rows)"
