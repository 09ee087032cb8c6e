# The two set-up commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# two stamps: `make demo` needs only lakeskip's runtime dependencies, tests/lint the extras
RUN_STAMP := $(VENV)/.installed-run
STAMP     := $(VENV)/.installed
SMOKE_VENV ?= build/smoke-venv
# make test / make test-unit: pytest-xdist processes, each running whole test files (its own
# Spark session, module fixtures once); 0 runs everything in the one pytest process. Files are
# handed out in collection order, the longest first (tests/conftest.py FILE_SECONDS), not in
# xdist's own order (most tests first), which left the slow few-test Spark files to the end
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

.PHONY: demo test test-e2e coverage test-unit lint fuzz bench bench-write bench-compact bench-first-write bench-range bench-index bench-kinds bench-clustered bench-functions bench-tpch bench-zorder bench-merge bench-frontends bench-paimon bench-tpcds test-tpcds test-interop test-interop-java test-s3 check-java smoke clean

$(RUN_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "lakeskip needs Python >= 3.11")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	@touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP)
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

check-java:
	@command -v java >/dev/null 2>&1 || { echo "error: java not found; lakeskip needs Java 17+ for Spark (e.g. apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	  [ -n "$$v" ] && [ "$$v" -ge 17 ] || { echo "error: lakeskip needs Java 17+, found: $$(java -version 2>&1 | head -1)" >&2; exit 1; }

demo: $(RUN_STAMP) check-java
	$(VENV)/bin/lakeskip demo

# unit + Spark tests (README, Development: what it costs); the end-to-end ones (marker e2e) are
# make test-e2e's. Without coverage: branch coverage's tracer doubles the CPU of the Python half
# (tests/unit/index + expressions: 43 s -> 90 s of CPU); `make coverage` is the same run with
# it. --durations: every log shows where the time went (FILE_SECONDS in tests/conftest.py orders
# the files by it)
test: $(STAMP) check-java
	@start=$$(date +%s); \
	$(PY) -m pytest -q $(XDIST) --durations=30 -m "not slow and not interop and not s3 and not e2e" $(COV_ARGS); rc=$$?; \
	echo "make test took $$(( $$(date +%s) - start )) s"; exit $$rc

# the end-to-end tests (marker e2e), on 2 processes as make test (.ci/run runs it): Spark's own
# front ends as real processes (tests/frontends: spark-sql, spark-submit, Thrift, Connect, each
# its own JVM and brain) and Spark writers racing to commit (test_commit_retry)
test-e2e: $(STAMP) check-java
	@start=$$(date +%s); \
	$(PY) -m pytest -q $(XDIST) --durations=10 -m "e2e and not slow and not interop and not s3"; rc=$$?; \
	echo "make test-e2e took $$(( $$(date +%s) - start )) s"; exit $$rc

coverage: COV_ARGS = --cov --cov-report=term
coverage: test

# no Spark session, no server (tests/unit/conftest.py fails a test that starts one), no forked
# writers or subprocesses (marker processes); hypothesis at 8 examples, also in the tests that
# set their own count (tests/examples.py unit_examples): the pure-Python tests, collected from
# tests/unit only (collecting all of tests/ imports pyspark: 46 s instead of 14 s at load ~25)
test-unit: $(STAMP)
	@start=$$(date +%s); \
	LAKESKIP_HYPOTHESIS_EXAMPLES=$${LAKESKIP_HYPOTHESIS_EXAMPLES:-8} LAKESKIP_NEVER_WRONG_EXAMPLES=$${LAKESKIP_NEVER_WRONG_EXAMPLES:-6} \
	  LAKESKIP_UNIT_EXAMPLES=$${LAKESKIP_UNIT_EXAMPLES:-8} \
	  $(PY) -m pytest -q $(XDIST) -m "not slow and not processes and not spark and not s3" tests/unit; rc=$$?; \
	echo "make test-unit took $$(( $$(date +%s) - start )) s"; exit $$rc

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# the never-wrong differentials at $(LAKESKIP_FUZZ_EXAMPLES) examples (default 2000), the
# slow bounded-memory probes and streaming kill tests (write, read: every slow test outside
# interop is named here, tests/unit/test_test_layout.py checks), then the randomized Spark
# tests (marker fuzz) at their fuzz counts (tests/examples.py)
fuzz: $(STAMP) check-java
	@start=$$(date +%s); \
	LAKESKIP_HYPOTHESIS_PROFILE=fuzz LAKESKIP_NEVER_WRONG_EXAMPLES=$${LAKESKIP_FUZZ_EXAMPLES:-2000} \
	  $(PY) -m pytest -q tests/unit/planner/test_never_wrong.py tests/unit/planner/test_bucket_pruning.py \
	  tests/unit/index/test_index_oracle.py tests/unit/catalog/write/test_pk_bounded_memory.py \
	  tests/unit/planner/test_runtime_filter.py \
	  tests/spark/write/test_streaming_kill.py tests/spark/stream/test_stream_read_kill.py && \
	LAKESKIP_HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -q -m "fuzz and not interop" tests/spark; rc=$$?; \
	echo "make fuzz took $$(( $$(date +%s) - start )) s"; exit $$rc

# Paimon 0.9.0 (pypaimon 0.2.0's sdist from PyPI) and the newest Paimon, 2.0.0 (Maven Central,
# fetched once with mvn into ~/.m2), and pypaimon 2.1
test-interop: $(STAMP) check-java
	$(PY) -m pytest -q -m interop

# spark.sql on a warehouse in moto's S3 through hadoop-aws (its own pytest process: its own Spark
# session with the S3A jars, fetched once with mvn into ~/.m2: hadoop-aws + the 690 MB AWS SDK bundle),
# and writer processes racing to commit on moto's S3 through obstore (test_s3_commits)
test-s3: $(STAMP) check-java
	$(PY) -m pytest -q -m s3 tests/s3

# Apache Paimon's Java classes only, 0.9.0 and 2.0.0 (needs javac; downloads pypaimon==0.2.0's
# sdist from PyPI once into .interop-cache/ or $$LAKESKIP_INTEROP_CACHE, and paimon-flink-2.0:2.0.0
# with mvn into ~/.m2)
test-interop-java: $(STAMP) check-java
	$(PY) -m pytest -q -m interop tests/interop/paimon_java


bench: $(STAMP) check-java
	$(PY) -c 'import matplotlib, deltalake' 2>/dev/null || $(PY) -m pip install --quiet -e '.[bench]'
	$(PY) bench/run.py $(BENCH_ARGS)
	$(PY) bench/write_indexes.py
	$(PY) bench/write_speed.py
	$(PY) bench/compact_speed.py
	$(PY) bench/frontends.py

# a lakeskip write vs Spark's own df.write.parquet of the same cached rows, stage by stage (issue #42)
bench-write: $(STAMP) check-java
	$(PY) bench/write_speed.py $(BENCH_ARGS)

# z-order / order compaction vs Spark's own repartitionByRange + sortWithinPartitions +
# write.parquet of the same rows, wall and CPU (issue #42)
bench-compact: $(STAMP) check-java
	$(PY) bench/compact_speed.py $(BENCH_ARGS)

# the seconds of a spark-sql session's first INSERT beyond its second (issue #42)
bench-first-write: $(STAMP) check-java
	$(PY) bench/first_write.py $(BENCH_ARGS)

bench-range: $(STAMP) check-java
	$(PY) bench/range_index.py $(BENCH_ARGS)

# primary-key point lookups and bloom lookups on a deletion-vector table (issue #15)
bench-kinds: $(STAMP) check-java
	$(PY) bench/table_kinds.py $(BENCH_ARGS)

bench-clustered: $(STAMP) check-java
	$(PY) bench/clustered_lookup.py $(BENCH_ARGS)

# bytes read (Spark's task input metrics) through functions of ts, top-n, count(*) (issue 39)
bench-functions: $(STAMP) check-java
	$(PY) bench/function_bytes.py $(BENCH_ARGS)

# TPC-H's 22 queries, lakeskip vs plain Spark over the same files, in PySpark and through
# spark-sql (issue 39: each >= 0.95x, planning <= 50 ms a scan); data by tpchgen-cli into
# .tpch-cache/ (TPCH_SF, default 1), tables loaded once and reused by the second frontend
TPCH_DEPS = [ -x $(VENV)/bin/tpchgen-cli ] || $(PY) -m pip install --quiet tpchgen-cli

bench-tpch: $(STAMP) check-java
	@$(TPCH_DEPS)
	$(PY) bench/tpch_queries.py --sf $${TPCH_SF:-1} --frontend pyspark $(BENCH_ARGS)
	$(PY) bench/tpch_queries.py --sf $${TPCH_SF:-1} --frontend spark-sql $(BENCH_ARGS)

# files a 1% range keeps after z-order / Hilbert (Paimon's keys, rank keys, delta-rs z_order)
bench-zorder: $(STAMP) check-java
	$(PY) -c 'import deltalake' 2>/dev/null || $(PY) -m pip install --quiet -e '.[bench]'
	$(PY) bench/zorder_layout.py $(BENCH_ARGS)

# lakeskip vs Apache Paimon's own Spark connector, same tables in one Spark session (issue 40).
# Central serves no Paimon Spark connector for Spark 4 and no build recipe for one may be
# committed (fetched code): LAKESKIP_PAIMON_SPARK_JARS names the connector's jars, built
# outside the repository (bench/README.md, "How Paimon's connector was had": the command)
bench-paimon: $(STAMP) check-java
	$(PY) bench/paimon_connector.py $(BENCH_ARGS)

# repeated point lookup: JVM-started brain (spark-sql) vs the in-process brain (issue #27)
bench-frontends: $(STAMP) check-java
	$(PY) bench/frontends.py $(BENCH_ARGS)

bench-merge: $(STAMP)
	$(PY) bench/merge_upsert.py $(BENCH_ARGS)

bench-index: $(STAMP)
	$(PY) bench/index_build.py
	$(PY) bench/planning.py

# a fresh environment from a plain `pip install .` (no extras, pip's cache reused): a runtime
# dependency missing from pyproject.toml fails here, not on a user's machine
smoke: check-java
	rm -rf $(SMOKE_VENV)
	$(PYTHON) -m venv $(SMOKE_VENV)
	$(SMOKE_VENV)/bin/python -m pip install --quiet .
	cd /tmp && $(CURDIR)/$(SMOKE_VENV)/bin/python $(CURDIR)/.ci/smoke.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache

# TPC-DS (issue 38): lakeskip (date-clustered, runtime filtering) beside plain Spark over the same
# files and over date-partitioned files; data generated once into .tpcds-cache/ (or
# $$LAKESKIP_TPCDS_CACHE) by DuckDB's tpcds extension from the package index
TPCDS_DEPS = $(PY) -c 'import duckdb, duckdb_extension_tpcds' 2>/dev/null || $(PY) -m pip install --quiet 'duckdb==1.5.5' 'duckdb-extension-tpcds==1.5.5'

bench-tpcds: $(STAMP) check-java
	@$(TPCDS_DEPS)
	$(PY) bench/tpcds.py --sf $${TPCDS_SF:-0.1} $(BENCH_ARGS)

# never wrong on TPC-DS: all 99 queries at SF 0.01, lakeskip (runtime filtering on) vs plain Spark
test-tpcds: $(STAMP) check-java
	@$(TPCDS_DEPS)
	$(PY) bench/tpcds.py --sf 0.01 --check --sides lakeskip,spark --no-needed --runs 0
