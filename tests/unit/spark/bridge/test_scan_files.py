"""``plan_scan``'s file columns (:func:`~lakeskip.spark.bridge.catalog_scans.batch.scan_files`,
``ScanFiles`` of the protocol) against each file computed on its own: its path by
``table_file_paths``, its partition values by ``partition_json``, its group, size, creation
time and deletion vector; and through the JSON the JVM reads."""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import shutil
import subprocess
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap
from tests.examples import unit_examples

from lakeskip import types as T
from lakeskip.catalog.cache import MetadataCache
from lakeskip.catalog.catalog import Catalog
from lakeskip.catalog.format.data_file import EMPTY_STATS, DataFileMeta, make_data_file_meta
from lakeskip.catalog.format.deletion_vectors import DeletionVectorUpdate
from lakeskip.catalog.format.manifest import FileKind, ManifestEntry
from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.format.stats import collect_stats
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import ProtocolError
from lakeskip.planner.scan import ScanPlanner
from lakeskip.spark.bridge.catalog_context import ReportLog
from lakeskip.spark.bridge.catalog_scans.batch import scan_files, scan_reply
from lakeskip.spark.bridge.catalog_scans.target import partition_json, scan_target
from lakeskip.spark.jvm import build
from lakeskip.spark.jvm.protocol import (
    PlanScanRequest,
    ScanFiles,
    decode,
    encode,
    pack_longs,
    unpack_longs,
)
from lakeskip.spark.read.dv import table_file_paths

TYPES = [T.INT, T.DOUBLE, T.STRING]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> FileStoreTable:
    catalog = Catalog(str(tmp_path_factory.mktemp("wh")))
    catalog.create_database("d")
    rt = T.RowType.of(("id", T.BIGINT), ("a", T.INT), ("b", T.DOUBLE), ("c", T.STRING))
    return catalog.create_table("d.t", rt, partition_keys=["a", "b", "c"])


_BASE = DataFileMeta(
    file_name="f",
    file_size=0,
    row_count=1,
    min_key=b"",
    max_key=b"",
    key_stats=EMPTY_STATS,
    value_stats=EMPTY_STATS,
    min_sequence_number=0,
    max_sequence_number=0,
    schema_id=0,
    level=0,
    extra_files=(),
)

_partitions = st.tuples(
    st.none() | st.integers(-3, 3),
    st.none() | st.sampled_from([0.0, -0.0, 1.5, math.inf, -math.inf, math.nan]),
    st.none() | st.sampled_from(["x", "y z", "1", ""]),
)
_files = st.lists(
    st.tuples(
        _partitions,
        st.integers(0, 2),  # bucket
        st.booleans(),  # an external path
        st.none() | st.integers(0, 10**13),  # creation time
        st.integers(0, 10**12),  # size
        st.booleans(),  # a deletion vector
        st.booleans(),  # a partition tuple object of its own (equal values, other identity)
    ),
    max_size=25,
)


def _entries(rows: list[Any]) -> tuple[list[ManifestEntry], dict[str, str]]:
    shared: dict[str, tuple[Any, ...]] = {}
    entries, vectors = [], {}
    for i, (partition, bucket, external, ctime, size, dv, fresh) in enumerate(rows):
        # equal partitions share one tuple as a decoded manifest's do, unless ``fresh``
        key = repr(partition)
        part = tuple(partition) if fresh else shared.setdefault(key, partition)
        name = f"data-{i}.parquet"
        file = dataclasses.replace(
            _BASE,
            file_name=name,
            file_size=size,
            creation_time=ctime,
            external_path=f"/elsewhere/p{i % 3}/{name}" if external else None,
        )
        entries.append(ManifestEntry(FileKind.ADD, part, bucket, 3, file))
        if dv:
            vectors[name] = f"dv{i}"
    return entries, vectors


JAVA_TESTS = Path(__file__).resolve().parents[3] / "java"


@pytest.fixture(scope="module")
def java_reader(tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[str]]:
    """``ScanFilesCheck`` (tests/java): the JVM's own reading of a reply, one per line."""
    java = shutil.which("java")
    if build.find_javac() is None or java is None:
        pytest.skip("no JDK: the JVM's reading is tested where the catalog jar can be built")
    _, spark_jars = build._pyspark_jars()
    cp = f"{build.build_jar()}:{spark_jars}/*"
    classes = tmp_path_factory.mktemp("scan_files_check")
    javac = [build.find_javac() or "javac", "--release", "17", "-nowarn", "-encoding", "UTF-8"]
    sources = [str(p) for p in JAVA_TESTS.rglob("*.java")]
    subprocess.run([*javac, "-cp", cp, "-d", str(classes), *sources], check=True)
    main = "lakeskip.jvm.read.ScanFilesCheck"
    proc = subprocess.Popen(
        [java, "-cp", f"{classes}:{cp}", main],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    yield proc
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0


def _java_read(proc: subprocess.Popen[str], reply: dict[str, Any]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(reply) + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    assert line, "ScanFilesCheck ended"
    out: dict[str, Any] = json.loads(line)
    return out


# other values of a reply, read by the same token walk as the files (Bridge.read)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(_files, _json)
def test_columns_hold_each_file_as_computed_alone(
    table: FileStoreTable, java_reader: subprocess.Popen[str], rows: list[Any], rest: Any
) -> None:
    entries, vectors = _entries(rows)
    got = scan_files(table, TYPES, entries, vectors)
    wire = decode(ScanFiles, json.loads(json.dumps(encode(got))))  # what the JVM reads
    # the JVM's reading: streamed into ScanFiles, equal to the one of the Jackson tree
    wired = encode(got)
    java = _java_read(java_reader, {"files": wired, "rest": rest, "groups": [{"files": wired}]})
    assert java["equal"] and java["pojo"] and java["group_pojo"] and java["rest_equal"]
    assert java["rest"] == rest
    assert [f[0] for f in java["files"]] == table_file_paths(table, entries)
    for f, e in zip(java["files"], entries, strict=True):
        want = [partition_json(t, v) for t, v in zip(TYPES, e.partition, strict=True)]
        assert f[1:3] == [e.file.file_size, e.file.creation_time or 0]
        assert json.dumps(f[3]) == json.dumps(want) and f[4] == repr((e.partition, e.bucket))
    for files in (got, wire):
        assert len(files) == len(entries)
        assert files.paths() == table_file_paths(table, entries)
        partition, group, size, mtime = (
            files.column(c) for c in ("partition", "group", "size", "mtime")
        )
        assert len(partition) == len(group) == len(size) == len(mtime) == len(entries)
        for i, e in enumerate(entries):
            want = [partition_json(t, v) for t, v in zip(TYPES, e.partition, strict=True)]
            # compared as JSON text: -0.0 is not 0.0
            assert json.dumps(list(files.partitions[partition[i]])) == json.dumps(want)
            assert files.groups[group[i]] == repr((e.partition, e.bucket))
            assert size[i] == e.file.file_size
            assert mtime[i] == (e.file.creation_time or 0)
            assert files.dv.get(str(i)) == vectors.get(e.file.file_name)
        assert len(files.dv) == sum(e.file.file_name in vectors for e in entries)
    # each shared value listed once
    assert len(set(map(json.dumps, got.partitions))) == len(got.partitions)
    assert len(set(got.groups)) == len(got.groups)
    assert len(set(got.dirs)) == len(got.dirs)


def test_external_file_first_in_its_bucket(table: FileStoreTable, tmp_path: Path) -> None:
    """An external file listed before its bucket's other files leaves their directory the
    bucket's own."""
    p = (1, 2.0, "x")
    ext = dataclasses.replace(_BASE, file_name="e.parquet", external_path="/ext/e.parquet")
    own = dataclasses.replace(_BASE, file_name="o.parquet")
    entries = [
        ManifestEntry(FileKind.ADD, p, 0, 1, ext),
        ManifestEntry(FileKind.ADD, p, 0, 1, own),
    ]
    files = scan_files(table, TYPES, entries, {})
    assert files.paths() == table_file_paths(table, entries)
    assert files.path(0) == "file:///ext/e.parquet"


def test_packed_columns_refuse_what_is_not_one() -> None:
    """A packed column is base64 of zlib-compressed whole 64-bit values: anything else is
    refused, never read as other numbers."""
    assert unpack_longs(pack_longs([])) == () == unpack_longs("")
    assert unpack_longs(pack_longs([-1, 7, 2**40])) == (-1, 7, 2**40)
    for bad in (
        "not base64!",
        base64.b64encode(b"not zlib").decode(),
        base64.b64encode(zlib.compress(b"1234567")).decode(),  # 7 bytes: no whole value
    ):
        with pytest.raises(ProtocolError):
            unpack_longs(bad)


# -- a whole table planned from the manifests' columns -------------------------------------

_ROW = T.RowType.of(("id", T.BIGINT), ("v", T.DOUBLE), ("p", T.INT))
_KINDS = {
    "append": ((), {}),
    "append-dv": ((), {"deletion-vectors.enabled": "true"}),
    "pk-dv": (("id",), {"deletion-vectors.enabled": "true", "bucket": "2"}),
}


class _Ctx:
    """What ``plan_scan`` reads of a Spark session's callback context."""

    def __init__(self, table: FileStoreTable) -> None:
        self.reports = ReportLog()
        self.time_zone = "UTC"
        self._table = table

    def table(self, req: object, name: object = None) -> FileStoreTable:
        return self._table


def _new_file(
    table: FileStoreTable, data: st.DataObject, partitioned: bool, pk: bool, at: int
) -> ManifestEntry:
    """A data file's entry (the plan of a whole table reads no data file): its stats of rows
    drawn here, a level (primary-key tables), an external path, a creation time."""
    n = data.draw(st.integers(1, 5))
    p = data.draw(st.integers(0, 2)) if partitioned else 0
    lo = data.draw(st.integers(-50, 50))
    rows = pa.table(
        {
            "id": pa.array(range(lo, lo + n), pa.int64()),
            "v": pa.array([float(data.draw(st.integers(-3, 3))) for _ in range(n)], pa.float64()),
            "p": pa.array([p] * n, pa.int32()),
        }
    )
    stats, cols = collect_stats(rows, _ROW)
    name = f"data-{at}.parquet"
    meta = dataclasses.replace(
        make_data_file_meta(name, data.draw(st.integers(1, 10**6)), n, stats, cols, 0, None, ()),
        level=data.draw(st.integers(0, 3)) if pk else 0,
        creation_time=data.draw(st.none() | st.integers(0, 10**13)),
        external_path=f"{table.path}-ext/{name}" if data.draw(st.booleans()) else None,
    )
    bucket = data.draw(st.integers(0, 1)) if pk else 0
    return ManifestEntry(FileKind.ADD, (p,) if partitioned else (), bucket, 2 if pk else -1, meta)


@settings(max_examples=unit_examples(30), deadline=None)
@given(st.sampled_from(sorted(_KINDS)), st.booleans(), st.data())
def test_whole_table_from_columns_is_the_per_file_plan(
    kind: str, partitioned: bool, data: st.DataObject
) -> None:
    """A whole-table scan (no filter) is planned and answered from the manifests' columns:
    the same decisions, report and reply (files, DVs, groups, runtime-filter columns) as the
    per-file path over the snapshot's entries, and the files a model of the commits keeps
    (every live file but those whose DV deletes every row and, on a primary-key table with
    DVs, those at level 0): append and primary-key tables with DVs, partitioned or not,
    files deleted in later commits."""
    keys, options = _KINDS[kind]
    pk, dv = bool(keys), "deletion-vectors.enabled" in options
    with tempfile.TemporaryDirectory() as wh:
        catalog = Catalog(wh)
        catalog.create_database("d")
        table = catalog.create_table(
            "d.t",
            _ROW,
            partition_keys=["p"] if partitioned else [],
            primary_keys=[*keys, "p"] if pk and partitioned else keys,
            options=options,
        )
        live: dict[str, ManifestEntry] = {}  # the model: file name -> its entry
        deleted_rows: dict[str, int] = {}  # rows its DV deletes
        made = 0
        for _ in range(data.draw(st.integers(1, 4))):
            step = data.draw(st.sampled_from(["add", "delete", "dv"] if dv else ["add", "delete"]))
            if step == "add" or not live:
                added = []
                for _ in range(data.draw(st.integers(1, 4))):
                    added.append(_new_file(table, data, partitioned, pk, made))
                    made += 1
                table.commit(added)
                live.update((e.file.file_name, e) for e in added)
            elif step == "delete":  # files without a DV, replaced by one new file or none
                some = [n for n in sorted(live) if n not in deleted_rows]
                gone = data.draw(st.lists(st.sampled_from(some), unique=True)) if some else []
                new = (
                    [_new_file(table, data, partitioned, pk, made)]
                    if data.draw(st.booleans())
                    else []
                )
                made += 1
                table.commit(new, [live.pop(n) for n in gone], kind=CommitKind.COMPACT)
                live.update((e.file.file_name, e) for e in new)
            else:  # a DV on one file: some of its rows, sometimes all
                name = data.draw(st.sampled_from(sorted(live)))
                rows = live[name].file.row_count
                positions = data.draw(st.sets(st.integers(0, rows - 1), min_size=1))
                ref = table.deletion_files().get(name)
                old = set(table.read_deletion_vector(ref)) if ref is not None else set()
                table.commit(
                    [],
                    kind=CommitKind.OVERWRITE,
                    overwrite_partitions=[],
                    deletion_vectors=DeletionVectorUpdate(
                        {name: BitMap(old | positions)},
                        {name: ref.index_file if ref is not None else None},
                    ),
                )
                deleted_rows[name] = len(old | positions)
        table = catalog.get_table("d.t")
        snap = table.latest_snapshot()
        planner = ScanPlanner(table, cache=MetadataCache())
        plan = planner.plan(None, snapshot=snap)
        assert plan.kept is not None, "a whole table is planned from the manifests' columns"
        entries = table.scan_files(snap)
        assert sorted(e.file.file_name for e in entries) == sorted(live)
        other = ScanPlanner(table, cache=MetadataCache())
        per_file = other.plan_files(entries, None, snap)
        want = [
            e.file.file_name
            for e in entries
            if deleted_rows.get(e.file.file_name, 0) < e.file.row_count
            and not (pk and e.file.level == 0)
        ]
        ctx = _Ctx(table)
        req = decode(
            PlanScanRequest,
            {
                "catalog": "lakeskip",
                "namespace": ["d"],
                "name": "t",
                "filters": [],
                "session": {"time_zone": "UTC", "settings": {}},
            },
        )
        target = scan_target(ctx, req)  # type: ignore[arg-type]
        reply = scan_reply(ctx, req, target, planner, plan, 0.0)  # type: ignore[arg-type]
        # the decisions, made only now, and the report: the per-file path's
        assert [e.file.file_name for e in plan.files] == want
        assert plan.decisions == per_file.decisions
        assert dataclasses.replace(
            plan.report, planning_ms=0, planning_cpu_ms=0
        ) == dataclasses.replace(per_file.report, planning_ms=0, planning_cpu_ms=0)
        theirs = scan_reply(ctx, req, target, other, per_file, 0.0)  # type: ignore[arg-type]
        for field in ("files", "evolved", "unpushable", "prunable", "index_values", "token"):
            assert getattr(reply, field) == getattr(theirs, field), field
        assert reply.files.paths() == table_file_paths(table, plan.files)
        assert sorted(reply.files.dv) == sorted(
            str(i) for i, e in enumerate(plan.files) if e.file.file_name in deleted_rows
        )
