"""Where a benchmark's figures go: ``bench/results/<name>-<UTC timestamp>.json``, with the load
average at its start and end beside them (figures taken on a shared machine are read as
ratios of sides measured together, never alone). Imported by the benchmarks run as scripts
(``python bench/x.py`` puts ``bench/`` first on the path)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"

Load = tuple[float, float, float]


def load_average() -> Load:
    """The 1, 5 and 15 minute load averages now."""
    return os.getloadavg()


def write_results(name: str, record: dict[str, Any], load_start: Load, load_end: Load) -> Path:
    """Print the load averages and write ``record`` with them to a new results file."""
    print(f"loaded: load average at start {load_start}, at end {load_end}")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}.json"
    body = {**record, "load_average_start": load_start, "load_average_end": load_end}
    path.write_text(json.dumps({**body, "loaded": True}, indent=2, default=str) + "\n")
    print(f"wrote {path}")
    return path
