"""Hypothesis example counts of the randomized Spark tests.

Each example of these tests is several Spark jobs, so ``make test`` runs a few per test (every
path is still taken) and ``make fuzz`` (``LAKESKIP_HYPOTHESIS_PROFILE=fuzz``; ``.ci/run`` runs
it) runs many. Every test that takes its count from here carries the ``fuzz`` marker, which
``make fuzz`` selects. ``LAKESKIP_SPARK_EXAMPLES=n`` sets every such count to ``n``.
"""

from __future__ import annotations

import os


def spark_examples(test: int, fuzz: int) -> int:
    """``test`` examples in ``make test``, ``fuzz`` under the fuzz profile."""
    override = os.environ.get("LAKESKIP_SPARK_EXAMPLES")
    if override:
        return int(override)
    return fuzz if os.environ.get("LAKESKIP_HYPOTHESIS_PROFILE") == "fuzz" else test


def unit_examples(full: int) -> int:
    """A unit test's own hypothesis count: ``full`` in ``make test`` and ``make fuzz``, at most
    ``LAKESKIP_UNIT_EXAMPLES`` in ``make test-unit`` (the fast loop sets it, as it lowers the
    profile's count through ``LAKESKIP_HYPOTHESIS_EXAMPLES``)."""
    cap = os.environ.get("LAKESKIP_UNIT_EXAMPLES")
    return min(full, int(cap)) if cap else full
