"""The `lakeskip` command in-process (it reuses the shared SparkSession) and sql_examples/."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakeskip.cli import main

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "sql_examples").glob("*.sql"))


def test_sql_e_runs_statements_and_prints_tables(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    wh = str(tmp_path / "wh")
    code = main(
        [
            "sql",
            "--warehouse",
            wh,
            "-e",
            "CREATE TABLE t (id BIGINT, s STRING) WITH ('file-index.bloom-filter.columns'='s'); "
            "INSERT INTO t VALUES (1, 'a'), (2, NULL); SELECT * FROM t ORDER BY id",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "| id | s    |" in out and "| 2  | NULL |" in out
    assert "Pruning: default.t: files" in err and "Time taken:" in err


def test_failing_statement_is_one_line_and_exit_1(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(
        ["sql", "--warehouse", str(tmp_path / "wh"), "-e", "SELECT * FROM nope.t WHERE; SELECT 1"]
    )
    out, err = capsys.readouterr()
    assert code == 1
    errors = [line for line in err.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "(line 1, col" in errors[0], err
    assert "Traceback" not in err and "| 1 |" not in out, "stops at the first failure"


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_sql_examples_run_on_a_fresh_warehouse(spark, tmp_path: Path, capsys, script: Path) -> None:  # type: ignore[no-untyped-def]
    """Each example on a fresh warehouse returns exactly its rows (exit code 0 is not enough:
    pruned files that held matches would show up as missing rows), and a rerun on the same
    warehouse works and says the same."""
    outputs = []
    for run in ("first", "second"):
        code = main(["sql", "--warehouse", str(tmp_path / "wh"), "-f", str(script)])
        out, err = capsys.readouterr()
        assert code == 0, f"{script.name} failed on the {run} run:\n{err[-2000:]}"
        assert "Error:" not in err
        if run == "first":
            _check_example_rows(script, out)
        outputs.append(_stable(out))
    assert outputs[0] == outputs[1], f"{script.name}: the rerun printed something else"


def _stable(out: str) -> list[str]:
    """Output lines that do not depend on timing, file names or snapshot history."""
    volatile = (
        "planning time",
        "planning CPU",
        "bytes",
        "| snapshot ",
        "Location",
        "Snapshot",
        "Time taken",
    )
    return [
        line
        for line in out.splitlines()
        if not any(v in line for v in volatile)
        and ".parquet" not in line
        and not line.startswith(("database ", "table "))  # created / already exists / dropped
    ]


def test_examples_show_pruning(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(
        ["sql", "--warehouse", str(tmp_path / "wh"), "-f", str(EXAMPLES[-1].parent / "zorder.sql")]
    )
    out, _ = capsys.readouterr()
    assert code == 0

    def metric(name: str) -> list[int]:
        return [int(line.split("|")[3]) for line in out.splitlines() if f"| {name} " in line]

    kept, total = metric("files kept"), metric("files total")
    assert len(kept) == len(total) == 3, out
    before, after = kept[0] / total[0], kept[1] / total[1]
    assert after < before, f"z-order should keep a smaller share for x < 50: {kept}/{total}"


def _tables(out: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every result table printed in ``out``: (header cells, rows of cells)."""
    lines = out.splitlines()
    tables = []
    i = 0
    while i + 2 < len(lines):
        if lines[i].startswith("+-") and lines[i + 1].startswith("| ") and lines[i + 2] == lines[i]:
            header = [c.strip() for c in lines[i + 1].strip("|").split("|")]
            rows = []
            i += 3
            while i < len(lines) and lines[i].startswith("| "):
                rows.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            tables.append((header, rows))
        i += 1
    return tables


# What each example's queries must return, worked out from the rows the script inserts
# (the z-order count from the generator's own arithmetic), by the header of the result.
_EXAMPLE_RESULTS = {
    "quickstart.sql": {
        ("id", "user_id", "status", "price", "ts"): [
            ["3", "u3", "PAID", "999", "2024-01-02 09:00:00"]
        ],
        ("refunds",): [["1"]],
        ("id", "price"): [["1", "120"]],
    },
    "map_index.sql": {("id",): [["3"], ["4"]]},
    "delete_update.sql": {
        ("id", "customer", "status", "dt"): [
            ["1", "c1", "OPEN", "2024-01-01"],
            ["2", "c2", "CLOSED", "2024-01-01"],
            ["3", "c3", "OPEN", "2024-01-02"],
            ["5", "c5", "CLOSED", "2024-01-03"],
            ["6", "NULL", "OPEN", "2024-01-03"],
        ],
        ("id", "status"): [["4", "SPAM"]],
    },
    "rewrite_file_index.sql": {("id", "host", "level"): [["3", "db-1", "ERROR"]]},
    "zorder.sql": {("count(1)",): [[str(sum(1 for i in range(4000) if (i * 7919) % 1000 < 50))]]},
}


def _check_example_rows(script: Path, out: str) -> None:
    expected = _EXAMPLE_RESULTS.get(script.name)
    assert expected is not None, f"{script.name}: add its expected results above"
    got = {tuple(h): rows for h, rows in _tables(out) if tuple(h) in expected}
    for header, rows in expected.items():
        assert got.get(header) == rows, (
            f"{script.name}: query with columns {header} returned {got.get(header)}, "
            f"expected {rows}"
        )


def test_merge_into_in_the_shell(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(
        [
            "sql",
            "--warehouse",
            str(tmp_path / "wh"),
            "-e",
            "CREATE TABLE t (id BIGINT, s STRING); INSERT INTO t VALUES (1, 'a'), (2, 'b'); "
            "MERGE INTO t USING (SELECT * FROM VALUES (2, 'B'), (3, 'c') AS v(id, s)) AS u "
            "ON t.id = u.id WHEN MATCHED THEN UPDATE SET s = u.s WHEN NOT MATCHED THEN INSERT *; "
            "SELECT * FROM t ORDER BY id",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "rows_inserted" in out
    assert "| 1  | a |" in out and "| 2  | B |" in out and "| 3  | c |" in out, out
