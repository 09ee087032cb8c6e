# The two set-up commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-unit test-spark lint fuzz bench bench-range bench-index test-interop check-java clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "lakeskip needs Python >= 3.10")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

check-java:
	@command -v java >/dev/null 2>&1 || { echo "error: java not found; lakeskip needs Java 17+ for Spark (e.g. apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	  [ -n "$$v" ] && [ "$$v" -ge 17 ] || { echo "error: lakeskip needs Java 17+, found: $$(java -version 2>&1 | head -1)" >&2; exit 1; }

demo: $(STAMP) check-java
	$(VENV)/bin/lakeskip demo

test: $(STAMP) check-java
	$(PY) -m pytest -q -m "not slow and not interop"

test-unit: $(STAMP)
	$(PY) -m pytest -q -m "not slow and not interop and not spark"

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

fuzz: $(STAMP)
	LAKESKIP_HYPOTHESIS_PROFILE=fuzz LAKESKIP_NEVER_WRONG_EXAMPLES=$${LAKESKIP_FUZZ_EXAMPLES:-2000} \
	  $(PY) -m pytest -q tests/unit/planner/test_never_wrong.py tests/unit/index/test_index_oracle.py

test-interop: $(STAMP) check-java
	$(PY) -m pytest -q -m interop

bench: $(STAMP) check-java
	$(PY) -c 'import matplotlib, deltalake' 2>/dev/null || $(PY) -m pip install --quiet -e '.[bench]'
	$(PY) bench/run.py $(BENCH_ARGS)

bench-range: $(STAMP) check-java
	$(PY) bench/range_index.py $(BENCH_ARGS)

bench-index: $(STAMP)
	$(PY) bench/index_build.py
	$(PY) bench/planning.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
