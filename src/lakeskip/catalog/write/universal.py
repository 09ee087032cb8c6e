"""Universal compaction of a primary-key bucket: which sorted runs to merge, and into which
level (Paimon's ``UniversalCompaction`` and ``Levels``, the rules as in Paimon's source).

A bucket's *sorted runs*, newest first: every level-0 file is a run of its own (newest first
by max sequence number, then min sequence number, then file name), then every non-empty level
1 .. ``num-levels`` - 1 is one run. ``num-levels`` is ``num-sorted-run.compaction-trigger`` +
1 (6 by default: levels 0-5, 5 the top, as Paimon's default). :func:`pick` tries, in order:

1. *size amplification* (at least ``trigger`` runs): when the newer runs together are larger
   than ``compaction.max-size-amplification-percent`` (200) % of the oldest run, every run
   is merged into the top level (a full compaction);
2. *size ratio* (at least ``trigger`` runs): starting from the newest run, the next run is
   added while the candidates' size * (100 + ``compaction.size-ratio``) / 100 is not below
   it (once two runs are in, a run at level 0 or 1 is added regardless); two or more runs
   make a unit;
3. *run count* (more than ``trigger`` runs): the newest ``runs - trigger + 1`` runs, grown
   by the size-ratio rule.

A unit's output level is the level of the first run left out minus 1; if that is 0, the
runs left out are taken in until one above level 0 is taken, whose level is the output;
when every run is taken, the top level. So a small upsert merges with the small newer runs
and leaves the big old run alone until the newer ones add up to twice its size.

``full-compaction.delta-commits`` (Paimon's early full compaction of a write): when set to N
>= 1, every write commit is followed by a *full* compaction of each bucket it wrote to
(:func:`pick_full`, Paimon's ``CompactStrategy.pickFullCompaction``) instead of the pick
above. That is Paimon's rule for a batch write: its Spark writer compacts every written
bucket fully before each batch commit "as long as this value is greater than 0"
(``DataWrite.needFullCompaction``: only a streaming micro-batch counts, ``(batchId + 1) % N
== 0``) and its Flink writer does so at every commit identifier ``% N == 0`` or
``Long.MAX_VALUE``, the identifier of every batch commit (``isFullCompactedIdentifier``).
lakeskip's writes are all batch commits (identifier ``Long.MAX_VALUE``), so N counts no
commits: any N >= 1 means after every write (:func:`full_compaction_on_write`).

Deletes (``-U``/``-D`` versions) are dropped only when the output level is at least the
highest non-empty level of the bucket (nothing older lies below), as Paimon's
``MergeTreeCompactManager``.

Example (sizes, newest first; level-0 files, then level 5):

    >>> runs = [Run(0, 10, ("a",)), Run(0, 10, ("b",)), Run(0, 10, ("c",)),
    ...         Run(0, 10, ("d",)), Run(5, 1000, ("e",))]
    >>> unit = pick(runs, UniversalOptions())
    >>> unit.files, unit.output_level
    (('a', 'b', 'c', 'd'), 4)
    >>> pick(runs[:4] + [Run(5, 10, ("e",))], UniversalOptions()).output_level  # size amp
    5
    >>> pick(runs[3:], UniversalOptions()) is None
    True
    >>> pick_full(runs, UniversalOptions()).output_level  # every run to the top
    5
    >>> pick_full([Run(5, 1000, ("e",))], UniversalOptions()) is None  # already one top run
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lakeskip.catalog.format.manifest import ManifestEntry
from lakeskip.catalog.options import FULL_COMPACTION_DELTA_COMMITS, option_int

__all__ = [
    "CompactUnit",
    "Run",
    "UniversalOptions",
    "bucket_runs",
    "drops_deletes",
    "force_pick_l0",
    "full_compaction_on_write",
    "pick",
    "pick_for_size_amp",
    "pick_for_size_ratio",
    "pick_full",
]

TRIGGER = "num-sorted-run.compaction-trigger"
MAX_SIZE_AMP = "compaction.max-size-amplification-percent"
SIZE_RATIO = "compaction.size-ratio"


@dataclass(frozen=True, slots=True)
class UniversalOptions:
    """The table's universal-compaction options (Paimon's names and defaults)."""

    trigger: int = 5
    max_size_amp: int = 200
    size_ratio: int = 1

    @classmethod
    def of(cls, options: Mapping[str, str]) -> UniversalOptions:
        return cls(
            max(1, option_int(options, TRIGGER)),
            max(0, option_int(options, MAX_SIZE_AMP)),
            max(0, option_int(options, SIZE_RATIO)),
        )

    @property
    def max_level(self) -> int:
        """``num-levels`` - 1: the top level (Paimon's default ``num-levels`` is the trigger
        + 1)."""
        return self.trigger


def full_compaction_on_write(options: Mapping[str, str]) -> bool:
    """Whether a write commit is followed by a full compaction of the buckets it wrote:
    ``full-compaction.delta-commits`` is set and > 0 (Paimon's batch-write rule, module doc).

    >>> full_compaction_on_write({}), full_compaction_on_write({FULL_COMPACTION_DELTA_COMMITS: "3"})
    (False, True)
    """
    value = options.get(FULL_COMPACTION_DELTA_COMMITS)
    if value is None:
        return False
    try:
        return int(str(value).strip()) > 0
    except ValueError:  # validated at CREATE / ALTER; a foreign table's bad value: Paimon's
        return False  # Spark writer would fail, lakeskip keeps its universal compaction


@dataclass(frozen=True, slots=True)
class Run:
    """One sorted run: its level, total file size and files (any identifiers)."""

    level: int
    size: int
    files: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CompactUnit:
    """The runs to merge (their files) and the level the merged run goes to."""

    files: tuple[str, ...]
    output_level: int
    runs: int
    rewrite: bool = False  # each file rewritten on its own (not merged with the others)


def bucket_runs(entries: Sequence[ManifestEntry]) -> list[Run]:
    """The sorted runs of one bucket's live files, newest first (Paimon's ``Levels``):
    level-0 files one run each, then one run per non-empty level above."""
    level0 = sorted(
        (e for e in entries if e.file.level == 0),
        key=lambda e: (
            -e.file.max_sequence_number,
            e.file.min_sequence_number,
            e.file.file_name,
        ),
    )
    runs = [Run(0, e.file.file_size, (e.file.file_name,)) for e in level0]
    by_level: dict[int, list[ManifestEntry]] = {}
    for e in entries:
        if e.file.level > 0:
            by_level.setdefault(e.file.level, []).append(e)
    for level in sorted(by_level):
        files = by_level[level]
        runs.append(
            Run(
                level,
                sum(e.file.file_size for e in files),
                tuple(e.file.file_name for e in files),
            )
        )
    return runs


def pick(
    runs: Sequence[Run], options: UniversalOptions, num_levels: int | None = None
) -> CompactUnit | None:
    """The unit to compact now, or ``None`` (rules in the module doc). ``num_levels``:
    Paimon's ``num-levels`` (default the trigger + 1)."""
    max_level = _max_level(runs, options, num_levels)
    unit = pick_for_size_amp(runs, options, max_level)
    if unit is None:
        unit = pick_for_size_ratio(runs, options, max_level)
    if unit is None and len(runs) > options.trigger:  # 3 run count
        count = len(runs) - options.trigger + 1
        unit = _size_ratio(runs, max_level, count, options, force=True)
    return unit


def force_pick_l0(
    runs: Sequence[Run], options: UniversalOptions, num_levels: int | None = None
) -> CompactUnit | None:
    """Every level-0 run, grown by the size-ratio rule (Paimon's ``forcePickL0``, what a
    lookup write of a deletion-vector table compacts after each write)."""
    count = 0
    for r in runs:
        if r.level > 0:
            break
        count += 1
    if count == 0:
        return None
    return _size_ratio(runs, _max_level(runs, options, num_levels), count, options, force=True)


def pick_full(
    runs: Sequence[Run],
    options: UniversalOptions,
    num_levels: int | None = None,
    with_dv: frozenset[str] = frozenset(),
) -> CompactUnit | None:
    """A full compaction (Paimon's ``CompactStrategy.pickFullCompaction``): every run merged
    into the top level; ``None`` when the bucket is empty or already one top-level run.
    A single top-level run whose files have DVs (``with_dv``: file names) gives those files
    only, each to be rewritten on its own (``CompactUnit.rewrite``, Paimon's
    ``fromFiles(maxLevel, files, true)``), dropping the rows its DV marks."""
    max_level = _max_level(runs, options, num_levels)
    if not runs:
        return None
    if len(runs) == 1 and runs[0].level == max_level:
        files = tuple(f for f in runs[0].files if f in with_dv)
        return CompactUnit(files, max_level, 1, rewrite=True) if files else None
    return _unit(runs, max_level, len(runs))


def _max_level(runs: Sequence[Run], options: UniversalOptions, num_levels: int | None) -> int:
    levels = options.max_level + 1 if num_levels is None else num_levels
    return max(levels, max((r.level for r in runs), default=0) + 1) - 1


def pick_for_size_amp(
    runs: Sequence[Run], options: UniversalOptions, max_level: int
) -> CompactUnit | None:
    """Rule 1: every run, when the newer runs outgrow the oldest by the size amplification."""
    if len(runs) < options.trigger:
        return None
    newer = sum(r.size for r in runs[:-1])
    if newer * 100 > options.max_size_amp * runs[-1].size:
        return _unit(runs, max_level, len(runs))
    return None


def pick_for_size_ratio(
    runs: Sequence[Run], options: UniversalOptions, max_level: int
) -> CompactUnit | None:
    """Rule 2: the newest runs while their sizes stay within the size ratio."""
    if len(runs) < options.trigger:
        return None
    return _size_ratio(runs, max_level, 1, options, force=False)


def _size_ratio(
    runs: Sequence[Run], max_level: int, count: int, options: UniversalOptions, force: bool
) -> CompactUnit | None:
    size = sum(r.size for r in runs[:count])
    triggered = force or count > 1
    for nxt in runs[count:]:
        if size * (100.0 + options.size_ratio) / 100.0 < nxt.size and (
            not triggered or nxt.level > 1
        ):
            break
        size += nxt.size
        count += 1
        triggered = True
    return _unit(runs, max_level, count) if triggered else None


def _unit(runs: Sequence[Run], max_level: int, count: int) -> CompactUnit:
    """Paimon's ``createUnit``: the output level of the first ``count`` runs."""
    if count == len(runs):
        level = max_level
    else:
        level = max(0, runs[count].level - 1)
    if level == 0:  # never output level 0: take runs in until one above level 0
        for nxt in runs[count:]:
            count += 1
            if nxt.level != 0:
                level = nxt.level
                break
    if count == len(runs):
        level = max_level
    files = tuple(f for r in runs[:count] for f in r.files)
    return CompactUnit(files, level, count)


def drops_deletes(unit: CompactUnit, runs: Sequence[Run]) -> bool:
    """Whether the unit's merge may drop retract versions: its output is above level 0 and
    at least the bucket's highest non-empty level (``MergeTreeCompactManager``)."""
    highest = max((r.level for r in runs), default=0)
    return unit.output_level != 0 and unit.output_level >= highest
