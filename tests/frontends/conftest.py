"""Spark's own front ends as real processes (``spark-sql``, the Thrift server, Spark Connect),
configured by conf alone; the catalog starts its Python brain itself.

Every test here is marked ``frontends`` and ``e2e``: ``make test-e2e`` runs them, not ``make
test`` (a JVM and a brain of their own per module: minutes of CPU). Servers are slow to start,
so each module starts its process once (module-scoped fixtures) and every child process, the
brain included, is killed in teardown (helpers in ``procs.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.frontends)
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="module")
def frontend_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("frontend")
