"""The `lakeskip` command in-process (it reuses the shared SparkSession) and sql_examples/."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakeskip.cli import main

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "sql_examples").glob("*.sql"))


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
    outputs = []
    for run in ("first", "second"):  # a rerun on the same warehouse works and says the same
        code = main(["sql", "--warehouse", str(tmp_path / "wh"), "-f", str(script)])
        out, err = capsys.readouterr()
        assert code == 0, f"{script.name} failed on the {run} run:\n{err[-2000:]}"
        assert "Error:" not in err
        outputs.append(_stable(out))
    assert outputs[0] == outputs[1], f"{script.name}: the rerun printed something else"


def _stable(out: str) -> list[str]:
    """Output lines that do not depend on timing, file names or snapshot history."""
    volatile = ("planning time", "bytes", "| snapshot ", "Location", "Snapshot", "Time taken")
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
