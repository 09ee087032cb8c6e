"""Decoded manifests on local disk (lakeskip.catalog.manifest_disk_cache): a fresh process
reads the same entries the Avro manifest holds, and a bad cache file costs a read, never an
answer."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from lakeskip import types as T
from lakeskip.catalog import Catalog, FileKind, ManifestEntry, collect_stats, make_data_file_meta
from lakeskip.catalog import manifest_disk_cache as disk
from lakeskip.catalog.cache import shared_cache
from lakeskip.catalog.format.data_file import SimpleStats
from lakeskip.catalog.format.manifest import read_manifest
from lakeskip.catalog.table import FileStoreTable

ROW = T.RowType.of(
    ("p", T.INT),
    ("d", T.DATE),
    ("s", T.STRING),
    ("x", T.DataType(T.TypeRoot.DECIMAL, precision=10, scale=2)),
)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "mcache"
    monkeypatch.setenv("LAKESKIP_MANIFEST_CACHE_DIR", str(root))
    monkeypatch.setenv("LAKESKIP_MANIFEST_CACHE_MIN_ENTRIES", "0")
    yield root


def _entry(table: FileStoreTable, i: int, part: tuple[object, ...]) -> ManifestEntry:
    data = pa.table(
        {
            "p": pa.array([part[0]] * 3, pa.int32()),
            "d": pa.array([part[1]] * 3, pa.date32()),
            "s": [f"s{i}", None, f"t{i}"],
            "x": pa.array([Decimal(i), None, Decimal("1.25")], pa.decimal128(10, 2)),
        }
    )
    stats, cols = collect_stats(data, ROW, "full")
    meta = make_data_file_meta(
        file_name=f"data-{i}.parquet",
        file_size=100 + i,
        row_count=3,
        stats=stats,
        stats_cols=cols,
        schema_id=0,
        embedded_index=(bytes([i % 256]) * (i % 5) or None) if i % 7 else None,
        extra_files=[f"data-{i}.parquet.index"] if i % 7 == 0 else [],
    )
    partition = table.schema.partition_types()
    assert len(partition) == 2
    if i % 2:  # every other field set, as primary-key and newer writers set them
        meta = dataclasses.replace(
            meta,
            min_key=b"k" * i,
            max_key=b"K" * i,
            key_stats=SimpleStats(b"a" * i, b"b" * i, (i, None)),
            min_sequence_number=i,
            max_sequence_number=2 * i,
            level=i % 4,
            creation_time=1_700_000_000_000 + i,
            delete_row_count=i % 3,
            file_source=i % 2,
            value_stats_cols=None if i % 3 else ("s",),
            external_path=f"file:///elsewhere/data-{i}.parquet" if i % 5 == 1 else None,
            first_row_id=i * 10,
            write_cols=("p", "s"),
            write_cols_sequences=(i, i + 1),
        )
    return ManifestEntry(FileKind.ADD, part, i % 4, 4, meta)


def _table(tmp_path: Path) -> FileStoreTable:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    table = cat.create_table("db.t", ROW, partition_keys=["p", "d"])
    day = datetime.date(2024, 1, 1).toordinal() - datetime.date(1970, 1, 1).toordinal()
    added = [_entry(table, i, (i % 3, day + i % 2)) for i in range(40)]
    table.commit(added[:20])
    table.commit(added[20:], deleted=added[3:9])  # DELETE entries in a manifest
    return table


def _fresh(table: FileStoreTable) -> list[ManifestEntry]:
    shared_cache().clear()  # a new process: nothing decoded in memory
    entries = Catalog(str(Path(table.path).parent.parent)).get_table("db.t").scan_files()
    disk.flush()  # what the read stored in the background is on disk
    return entries


def test_fresh_process_reads_what_the_manifests_hold(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAKESKIP_MANIFEST_CACHE_DIR", "off")
    table = _table(tmp_path)
    want = _fresh(table)
    monkeypatch.setenv("LAKESKIP_MANIFEST_CACHE_DIR", str(cache_dir))
    assert not cache_dir.exists()
    assert _fresh(table) == want, "stored on the first read"
    assert len(list(cache_dir.glob("*.lsmc"))) >= 2, "one file per manifest read"
    assert _fresh(table) == want, "read back from disk"
    snap = table.latest_snapshot()
    assert snap is not None
    for m in table.manifest_metas(snap):
        got = disk.load(table.path, m.file_name, m.file_size, table.partition_types)
        assert got is not None, m.file_name
        assert got[0] == read_manifest(
            table.file_io, table.path, m.file_name, table.partition_types
        ), "every field of every entry, DELETEs and partitions included"


def test_corrupt_or_foreign_cache_file_is_ignored(tmp_path: Path, cache_dir: Path) -> None:
    table = _table(tmp_path)
    want = _fresh(table)
    files = sorted(cache_dir.glob("*.lsmc"))
    assert len(files) >= 2
    data = bytearray(files[0].read_bytes())
    data[-3] ^= 0xFF  # a flipped bit in the compressed body: checksum mismatch
    files[0].write_bytes(bytes(data))
    files[2 % len(files)].write_bytes(files[1].read_bytes()[:20])  # truncated
    assert _fresh(table) == want
    # a cache file that names another manifest (same digest by accident) is not used
    snap = table.latest_snapshot()
    assert snap is not None
    a, b = table.manifest_metas(snap)[:2]
    src = disk._file(cache_dir, table.path, a.file_name, a.file_size)
    dst = disk._file(cache_dir, table.path, b.file_name, b.file_size)
    dst.write_bytes(src.read_bytes())
    assert disk.load(table.path, b.file_name, b.file_size, table.partition_types) is None
    assert _fresh(table) == want


def test_small_manifests_and_off_are_not_kept(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAKESKIP_MANIFEST_CACHE_MIN_ENTRIES", "1000")
    table = _table(tmp_path)
    _fresh(table)
    assert not list(cache_dir.glob("*.lsmc")), "below the entry threshold"
    monkeypatch.setenv("LAKESKIP_MANIFEST_CACHE_MIN_ENTRIES", "0")
    monkeypatch.setenv("LAKESKIP_MANIFEST_CACHE_DIR", "off")
    _fresh(table)
    assert not cache_dir.exists(), "off"


def test_directory_stays_within_its_bound(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path)
    entries = _fresh(table)
    monkeypatch.setattr(disk, "_UNCHECKED", [0, False])
    monkeypatch.setenv("LAKESKIP_MANIFEST_CACHE_BYTES", "20000")
    for i in range(40):
        disk.store(table.path, f"manifest-x-{i}", i, entries, table.partition_types)
    total = sum(f.stat().st_size for f in cache_dir.glob("*.lsmc"))
    one = max(f.stat().st_size for f in cache_dir.glob("*.lsmc"))
    assert total <= 20000 + 8 * one, f"{total} bytes kept"
    assert disk.load(table.path, "manifest-x-39", 39, table.partition_types) is not None, (
        "the newest survives"
    )


def test_columns_in_memory_come_before_the_disk_cache(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole-table read after a read of some partitions (which decoded the manifests
    column-wise, in memory) makes the entries from those columns: the disk cache is neither
    read nor, for a local table, written again; the entries are the Avro manifests'."""
    table = _table(tmp_path)
    want = _fresh(table)  # stored on disk
    assert list(cache_dir.glob("*.lsmc"))
    shared_cache().clear()
    fresh = Catalog(str(Path(table.path).parent.parent)).get_table("db.t")
    snap = fresh.latest_snapshot()
    assert snap is not None
    some, _, _ = fresh.scan_files_in(
        snap, lambda metas: [True] * len(metas), lambda parts: [p[0] == 1 for p in parts]
    )
    assert some and {e.partition[0] for e in some} == {1}
    calls: list[str] = []
    monkeypatch.setattr(disk, "load", lambda *a: calls.append("load"))
    monkeypatch.setattr(disk, "store_later", lambda *a: calls.append("store"))
    assert fresh.scan_files(snap) == want
    assert calls == []
    for m in fresh.manifest_metas(snap):
        assert fresh.manifest(m) == read_manifest(
            fresh.file_io, fresh.path, m.file_name, fresh.partition_types
        ), "every field of every entry, DELETEs and partitions included"
