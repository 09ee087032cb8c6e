"""`make demo` (one of the README's two commands) on a small table: it runs end to end, every
query agrees with plain Spark, and the selective queries keep fewer files than they read."""

from __future__ import annotations

import io

from lakeskip.spark.front.demo import QUERIES, run_demo


def test_demo_runs_and_never_mismatches(session) -> None:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    assert run_demo(session, rows=20_000, files=4, out=out) == 0
    text = out.getvalue()
    assert "MISMATCH" not in text, text
    for name, _ in QUERIES:
        assert text.count(name) == 2, f"{name!r} should run before and after compaction"
    report_lines = [line for line in text.splitlines() if line.startswith("point lookup")]
    kept, total = report_lines[0].split()[-4].split("/")
    assert int(kept) < int(total), "a point lookup on user_id must skip files"
    assert "file indexes in every file: " in text and "bloom-filter(user_id)" in text, text
    assert "plain:    the same filter over every file" in text, "says what 'plain' means"
    assert " sql --warehouse " in text and "lakeskip" in text.splitlines()[-2], text
