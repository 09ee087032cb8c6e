"""A Spark Connect server started with only conf, driven by PySpark's Connect client: SQL,
DataFrame reads that prune, ``writeTo(...).append()``, CALL, and ``lakeskip.connect`` on the
Connect session."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.frontends.procs import (
    START_TIMEOUT,
    frontend_conf_for,
    frontend_env,
    kill_tree,
    spawn,
    wait_for,
)
from tests.frontends.test_thrift import _free_port, _listening

pytest.importorskip("grpc", reason="pyspark[connect] (lakeskip's connect extra) not installed")


@pytest.fixture(scope="module")
def remote(frontend_dir: Path):  # type: ignore[no-untyped-def]
    import os

    from pyspark.sql.connect.session import SparkSession as ConnectSession

    from lakeskip.spark.front.frontends import frontend_command

    # Connect mode is os.environ's SPARK_CONNECT_MODE_ENABLED (pyspark's functions dispatch on
    # it): set here as builder.remote() would, restored after so that the suite's later local
    # sessions do not inherit it
    saved_env = dict(os.environ)

    tmp = frontend_dir / "connect"
    tmp.mkdir()
    port = _free_port()
    wh = tmp / "wh"
    proc = spawn(
        frontend_command("connect-server", frontend_conf_for(wh, tmp), port=port),
        tmp,
        frontend_env(),
    )
    spark = None
    try:
        wait_for(
            lambda: _listening(port) or proc.poll() is not None, START_TIMEOUT, "the Connect server"
        )
        assert proc.poll() is None, "the Connect server exited"
        # the Connect client's own builder: pyspark's SparkSession.builder.remote() refuses
        # (SESSION_ALREADY_EXIST) when this process already runs the suite's local session,
        # i.e. whenever a Spark test ran before this module
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
        spark = ConnectSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        yield spark, wh
    finally:
        if spark is not None:
            spark.stop()
        kill_tree(proc)
        os.environ.clear()
        os.environ.update(saved_env)


def test_sql_dataframes_writes_and_call(remote) -> None:  # type: ignore[no-untyped-def]
    spark, _ = remote
    spark.sql(
        "CREATE TABLE lakeskip.default.c (id BIGINT, k STRING) "
        "WITH ('file-index.bloom-filter.columns' = 'k')"
    )
    for i in range(3):
        spark.createDataFrame([(i, f"k{i}")], "id BIGINT, k STRING").writeTo(
            "lakeskip.default.c"
        ).append()
    df = spark.table("lakeskip.default.c").filter("k = 'k2'")
    assert [tuple(r) for r in df.collect()] == [(2, "k2")]
    plan = df._explain_string(mode="simple")  # type: ignore[attr-defined]
    assert "LakeFileIndex(1 paths)" in plan, plan
    rows = spark.sql("EXPLAIN PRUNING SELECT * FROM lakeskip.default.c WHERE k = 'k2'").collect()
    metrics = {r[1]: r[2] for r in rows}
    assert metrics["files total"] == "3" and metrics["files kept"] == "1", metrics
    [res] = spark.sql("CALL sys.rewrite_file_index(table => 'default.c')").collect()
    assert res["files_rewritten"] + res["files_unchanged"] == 3, res
    spark.sql("DELETE FROM lakeskip.default.c WHERE id = 0")
    assert spark.table("lakeskip.default.c").count() == 2


def test_pruning_reports_on_connect_says_what_works_there(remote) -> None:  # type: ignore[no-untyped-def]
    import lakeskip.spark
    from lakeskip.errors import UnsupportedStatementError

    spark, _ = remote
    with (
        pytest.raises(UnsupportedStatementError, match=r"EXPLAIN PRUNING") as e,
        lakeskip.spark.pruning_reports(spark),
    ):
        pass
    assert "\n" not in str(e.value), "one line"


def test_lakeskip_connect_on_a_connect_session(remote) -> None:  # type: ignore[no-untyped-def]
    import lakeskip
    from lakeskip.errors import InvalidArgumentError

    spark, wh = remote
    s = lakeskip.connect(str(wh), spark=spark)
    s.sql("CREATE TABLE r (id BIGINT, k STRING) WITH ('file-index.bloom-filter.columns' = 'k')")
    s.write(spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, k STRING"), "r")
    assert [tuple(r) for r in s.sql("SELECT * FROM r WHERE k = 'b'").collect()] == [(2, "b")]
    assert s.table("r").files(), "the handle reads the warehouse the server serves"
    with pytest.raises(InvalidArgumentError, match=r"spark\.sql\.catalog\.other"):
        lakeskip.connect(str(wh), spark=spark, catalog_name="other")
