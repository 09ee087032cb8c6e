"""CI smoke test of a plain ``pip install .`` (no extras): create, INSERT, SELECT with pruning.

Run with the fresh environment's interpreter from outside the source tree, so the installed
package (not ``src/``) is imported and a runtime dependency missing from ``pyproject.toml``
fails here.
"""

from __future__ import annotations

import sys
import tempfile

import lakeskip


def main() -> int:
    warehouse = tempfile.mkdtemp(prefix="lakeskip-smoke-")
    session = lakeskip.connect(warehouse, master="local[1]")
    session.sql(
        "CREATE TABLE t (id BIGINT, user_id STRING) "
        "WITH ('file-index.bloom-filter.columns' = 'user_id')"
    )
    for f in range(3):
        values = ", ".join(f"({f * 10 + i}, 'u{f}_{i}')" for i in range(10))
        session.sql(f"INSERT INTO t VALUES {values}")
    rows = session.sql("SELECT id FROM t WHERE user_id = 'u1_3'").collect()
    report = session.last_reports[0]
    print(f"smoke: rows {[r[0] for r in rows]}; {report.summary()}")
    if [r[0] for r in rows] != [13]:
        print("smoke: wrong rows", file=sys.stderr)
        return 1
    if report.kept_files != 1 or report.total_files != 3:
        print("smoke: expected 1 of 3 files kept", file=sys.stderr)
        return 1
    session.spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
