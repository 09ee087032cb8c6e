"""Jars from Maven Central for the tests that need Java beyond pyspark's own (the interop suite's
newest Paimon, ``make test-s3``'s hadoop-aws): ``mvn dependency:get`` puts them in the local
Maven repository once (``$LAKESKIP_M2_REPO`` or ``~/.m2/repository``); lakeskip itself never
fetches anything at run time. A missing ``mvn`` or an unreachable Central skips with the reason.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

M2 = Path(os.environ.get("LAKESKIP_M2_REPO", Path.home() / ".m2" / "repository"))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def maven_path(coordinates: str) -> Path:
    """``group:artifact:version`` -> its jar's path in the local repository."""
    group, artifact, version = coordinates.split(":")
    return M2.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.jar")


def maven_fetch(coordinates: str, transitive: bool = False) -> None:
    """``mvn dependency:get`` of one artifact (with its compile/runtime dependencies when
    ``transitive``) into the local repository; skips the test when it cannot."""
    if shutil.which("mvn") is None:
        pytest.skip(f"mvn is needed to fetch {coordinates} from Maven Central")
    cmd = ["mvn", "-q", "-B", "dependency:get", f"-Dartifact={coordinates}"]
    cmd += [f"-Dtransitive={str(transitive).lower()}", f"-Dmaven.repo.local={M2}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        tail = [ln for ln in (r.stdout + r.stderr).splitlines() if "ERROR" in ln][:2]
        pytest.skip(f"cannot fetch {coordinates} from Maven Central: {tail}")


def maven_jar(coordinates: str, sha256: str | None = None) -> Path:
    """The jar of ``group:artifact:version``, fetched once; its sha256 is checked when given."""
    jar = maven_path(coordinates)
    if not jar.exists():
        maven_fetch(coordinates)
    if not jar.exists():
        pytest.fail(f"mvn fetched {coordinates} but {jar} is missing")
    if sha256 is not None and (got := _sha256(jar)) != sha256:
        pytest.fail(f"{jar}: sha256 {got}, expected {sha256}")
    return jar
