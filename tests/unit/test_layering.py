"""The Spark-free layers must stay Spark-free (import-linter checks statically; this checks
at run time, including imports done inside functions at module import)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_planner_does_not_import_pyspark() -> None:
    code = (
        "import sys, lakeskip, lakeskip.planner, lakeskip.catalog, lakeskip.index, "
        "lakeskip.expressions, lakeskip.sql, lakeskip.sort, lakeskip.procedures\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j'))\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"pyspark imported by a Spark-free layer: {out.stdout}"
