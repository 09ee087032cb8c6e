"""``full-compaction.delta-commits`` through Spark: every write to a primary-key table is
followed by a full compaction of the buckets it wrote (Paimon's rule for batch writes), and
the rows are the latest-row-per-key model's."""

from __future__ import annotations

from typing import Any

from lakeskip.catalog.format.snapshot import CommitKind
from lakeskip.catalog.table import FileStoreTable
from lakeskip.catalog.write.universal import bucket_runs

_WRITES = (  # (statement, model update: key -> value or None)
    "INSERT INTO {t} SELECT CAST(id AS INT), 'a', concat('v', CAST(id AS STRING)) "
    "FROM range(0, 400)",
    "INSERT INTO {t} SELECT CAST(id AS INT), 'b', concat('v', CAST(id AS STRING)) "
    "FROM range(0, 300)",
    "INSERT INTO {t} SELECT CAST(id * 7 % 400 AS INT), 'a', 'w2' FROM range(0, 60)",
    "DELETE FROM {t} WHERE p = 'a' AND id % 10 = 3",
    "INSERT INTO {t} SELECT CAST(id * 11 % 400 AS INT), 'a', 'w4' FROM range(0, 40)",
)


def _model() -> list[dict[tuple[str, int], str]]:
    """The table's rows (key (p, id) -> v) after each of :data:`_WRITES`."""
    rows: dict[tuple[str, int], str] = {}
    out = []
    rows.update({("a", i): f"v{i}" for i in range(400)})
    out.append(dict(rows))
    rows.update({("b", i): f"v{i}" for i in range(300)})
    out.append(dict(rows))
    rows.update({("a", i * 7 % 400): "w2" for i in range(60)})
    out.append(dict(rows))
    rows = {k: v for k, v in rows.items() if not (k[0] == "a" and k[1] % 10 == 3)}
    out.append(dict(rows))
    rows.update({("a", i * 11 % 400): "w4" for i in range(40)})
    out.append(dict(rows))
    return out


def _buckets(table: FileStoreTable) -> dict[tuple[Any, int], list[Any]]:
    out: dict[tuple[Any, int], list[Any]] = {}
    for e in table.refresh().scan_files():
        out.setdefault((tuple(e.partition), e.bucket), []).append(e)
    return out


def test_full_compaction_after_every_write(session: Any) -> None:
    """With ``full-compaction.delta-commits`` = 3 each write (INSERT, DELETE) leaves every
    bucket it wrote as one sorted run at the top level (5) in a COMPACT snapshot after the
    write's, with no retracts left (the files hold exactly the table's rows), and the
    buckets it did not write as they were; deletion-vector tables too, their DVs gone.
    Without the option the same writes leave level-0 runs (universal compaction waits for
    5 runs)."""
    spark = session.spark
    model = _model()
    tables = {
        "fc": "'full-compaction.delta-commits' = '3'",
        "fc_dv": "'full-compaction.delta-commits' = '3', 'deletion-vectors.enabled' = 'true'",
        "fc_off": "'num-sorted-run.compaction-trigger' = '5'",
    }
    for t, props in tables.items():
        session.sql(
            f"CREATE TABLE {t} (id INT, p STRING, v STRING, PRIMARY KEY (p, id) NOT ENFORCED) "
            f"PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '2', {props})"
        )
        table = session.catalog.get_table(f"default.{t}")
        for w, statement in enumerate(_WRITES):
            before = _buckets(table)
            snapshots = len(table.refresh().list_snapshots())
            session.sql(statement.format(t=t))
            after = _buckets(table)
            written = {p: [e.file.file_name for e in es] for p, es in after.items()}
            new = table.refresh().list_snapshots()[snapshots:]
            touched = {
                p
                for p, es in after.items()
                if {e.file.file_name for e in es} != {e.file.file_name for e in before.get(p, [])}
            }
            rows = spark.table(f"{session.catalog_name}.default.{t}").collect()
            assert {(r.p, r.id): r.v for r in rows} == model[w], (t, w)
            snapshot = table.refresh().latest_snapshot()
            if t == "fc_off":
                assert all(s.commit_kind is not CommitKind.COMPACT for s in new)
                if w == 2:  # a second level-0 run in the upserted buckets: enough shown
                    assert all([r.level for r in bucket_runs(after[p])] == [0, 0] for p in touched)
                    break
                continue
            if not touched:  # a DELETE on a deletion-vector table only sets DVs, as Paimon's
                assert (t, w) == ("fc_dv", 3)
                assert [s.commit_kind for s in new] == [CommitKind.OVERWRITE]
                assert table.deletion_files(snapshot)
                continue
            if t == "fc":  # (a deletion-vector write may leave a top-level run itself)
                assert [s.commit_kind for s in new][-1] is CommitKind.COMPACT, (t, w, new)
            for p in touched:
                runs = bucket_runs(after[p])
                assert [r.level for r in runs] == [5], (t, w, p, written[p])
            for p in set(before) - touched:  # untouched buckets kept their files
                assert written[p] == [e.file.file_name for e in before[p]]
            assert not table.deletion_files(snapshot)  # compacted files lose their DVs
            # deletes dropped at the top level: the files hold exactly the table's rows
            assert sum(e.file.row_count for es in after.values() for e in es) == len(rows)


def test_full_compaction_of_fixed_bucket_append_table(session: Any) -> None:
    """A fixed-bucket append table with ``full-compaction.delta-commits``: a write that
    leaves a bucket 3 small files merges them into one (a COMPACT snapshot after the
    write's, as Paimon's writer compacts each written bucket before the batch commit);
    fewer files are left alone; rows stay those written."""
    spark = session.spark
    session.sql(
        "CREATE TABLE fa (k INT, v STRING) TBLPROPERTIES "
        "('bucket' = '2', 'bucket-key' = 'k', 'full-compaction.delta-commits' = '1')"
    )
    table = session.catalog.get_table("default.fa")
    want = []
    for w in range(3):
        snapshots = len(table.refresh().list_snapshots())
        session.sql(
            f"INSERT INTO fa SELECT CAST(id AS INT), 'w{w}' FROM range({w * 100}, {w * 100 + 100})"
        )
        want += [(i, f"w{w}") for i in range(w * 100, w * 100 + 100)]
        kinds = [s.commit_kind for s in table.refresh().list_snapshots()[snapshots:]]
        files = [len(es) for es in _buckets(table).values()]
        if w < 2:
            assert kinds == [CommitKind.APPEND] and files == [w + 1, w + 1], (w, kinds, files)
        else:
            assert kinds == [CommitKind.APPEND, CommitKind.COMPACT] and files == [1, 1], files
        rows = spark.table(f"{session.catalog_name}.default.fa").collect()
        assert sorted((r.k, r.v) for r in rows) == want
