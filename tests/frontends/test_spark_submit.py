"""``spark-submit $(lakeskip spark-conf ...) app.py`` for a Python app that never calls
``lakeskip.connect``: the catalog starts its brain (a py4j server of its own and a Python
process), and when the app is done the JVM exits by itself -- nothing lakeskip started keeps
it up, with or without ``spark.stop()``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.frontends.procs import (
    START_TIMEOUT,
    Lines,
    brain_pids,
    frontend_conf_for,
    frontend_env,
    kill_tree,
    spawn,
    wait_for,
)

APP = """
import sys
from pyspark.sql import SparkSession

try:
    spark = SparkSession.builder.getOrCreate()
    spark.sql("CREATE TABLE lakeskip.default.t (id BIGINT, s STRING)")
    spark.sql("INSERT INTO lakeskip.default.t VALUES (1, 'a'), (2, 'b')")
    n = spark.sql("SELECT count(*) FROM lakeskip.default.t WHERE s = 'b'").collect()[0][0]
    spark.sql("CALL lakeskip.sys.compact(table => 'default.t')").collect()
    # the catalog's brain answered (this driver registered no handler of its own)
    jvm = spark.sparkContext._jvm
    children = jvm.java.lang.ProcessHandle.current().children().toArray()
    brains = sum("lakeskip.spark.front.brain" in str(p.info().commandLine()) for p in children)
    print("app-done", n, brains, flush=True)
except BaseException as e:
    print("app-failed", type(e).__name__, str(e).splitlines()[:1], flush=True)
    raise
if sys.argv[1] == "stop":
    spark.stop()
"""

#: after the app's last line, how long the JVM may take to stop (Spark's own shutdown hooks
#: run then); a JVM kept up by a non-daemon thread never exits, so this only bounds the wait
EXIT_GRACE = 120.0


@pytest.mark.parametrize("ending", ["stop", "no-stop"])
def test_conf_alone_python_app_exits_by_itself(frontend_dir: Path, ending: str) -> None:
    from lakeskip.spark.front.frontends import conf_flags, spark_bin

    tmp = frontend_dir / f"submit-{ending}"
    tmp.mkdir()
    app = tmp / "app.py"
    app.write_text(APP)
    conf = frontend_conf_for(tmp / "wh", tmp)
    cmd = [spark_bin("spark-submit"), *conf_flags(conf), str(app), ending]
    proc = spawn(cmd, tmp, frontend_env())
    out, err = Lines(proc.stdout), Lines(proc.stderr)
    try:
        out.wait_line(lambda line: line.startswith(("app-done", "app-failed")), START_TIMEOUT)
        assert "app-done 1 1" in out.all, (out.all, err.drain()[-40:])
        try:
            proc.wait(timeout=EXIT_GRACE)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"spark-submit still running {EXIT_GRACE:.0f} s after the app ended "
                f"(stderr tail: {err.drain()[-20:]})"
            )
        assert proc.returncode == 0, err.drain()[-40:]
        wait_for(lambda: not brain_pids(proc.pid), 15, "the brain to exit with the JVM")
    finally:
        kill_tree(proc)
