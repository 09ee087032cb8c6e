"""Fixtures for the interop suite (``make test-interop``): Paimon's Java classes and Spark.

``paimon_java`` runs every test that takes it twice, once per Paimon release:

* **0.9.0**: the ``paimon-python-java-bridge-0.9.0.jar`` inside the ``pypaimon==0.2.0`` source
  distribution on PyPI (downloaded once with ``pip download`` into the cache directory,
  sha256-checked);
* **2.0.0**, the newest release on Maven Central: ``org.apache.paimon:paimon-flink-2.0:2.0.0``,
  Paimon's shaded bundle of paimon-core/common/format (its Flink classes are not used). Central
  has no ``paimon-bundle`` 2.0.0 (the newest is 1.4.2) nor paimon-common/format 2.0.0 as separate
  artifacts, so this jar is the only complete 2.0.0 on Central. ``mvn dependency:get`` fetches
  it once into the local Maven repository (``~/.m2`` or ``$LAKESKIP_M2_REPO``), sha256-checked.

``paimon_newest`` is the 2.0.0 probe alone, for what 0.9 cannot do (range-bitmap indexes).
Hadoop and SLF4J come from pyspark's ``jars/``. The probe ``java/PaimonProbe.java`` is compiled
with ``javac`` against each release into the cache, keyed by its hash (against the newest, with
``java/PaimonNewestOps.java``: ops 0.9 has no API for).

Cache: ``$LAKESKIP_INTEROP_CACHE`` or ``<repo>/.interop-cache``. The tests skip, with the
reason, only when Java/javac are missing or a download cannot be made.
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
from tests.maven import maven_jar

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("LAKESKIP_INTEROP_CACHE", REPO / ".interop-cache"))
PROBE_SOURCE = Path(__file__).parent / "java" / "PaimonProbe.java"
#: ops only the newest release has an API for (append-table deletion vectors), compiled with
#: the probe against that release alone
NEWEST_OPS_SOURCE = Path(__file__).parent / "java" / "PaimonNewestOps.java"
SDIST = "pypaimon==0.2.0"
JAR_MEMBER = "pypaimon-0.2.0/deps/jars/paimon-python-java-bridge-0.9.0.jar"
JAR_SHA256 = "dc9048366715fc75d2b44e3f8ac1dbfab011b8c34aafc26ffa216500fb890b0e"
PYSPARK_JARS = ("hadoop-client-api-", "hadoop-client-runtime-", "slf4j-api-", "jcl-over-slf4j-")
# the newest Paimon release: (Maven coordinates, sha256 of the jar)
NEWEST = (
    "org.apache.paimon:paimon-flink-2.0:2.0.0",
    "f9999454cd1827da1a96556a6ef0525a98fddcfa4370837a51119fecc181f5f0",
)
VERSIONS = ("0.9.0", "2.0.0")


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
    """Runs ``PaimonProbe`` against a warehouse with one Paimon release's classes."""

    classpath: str
    version: str

    @property
    def release(self) -> tuple[int, int]:
        major, minor, *_ = self.version.split(".")
        return int(major), int(minor)

    def __call__(self, warehouse: Path | str, *ops: dict[str, Any]) -> list[Any]:
        request = json.dumps({"warehouse": str(warehouse), "ops": list(ops)})
        cmd = ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx512m"]
        cmd += ["-cp", self.classpath, "PaimonProbe"]
        r = subprocess.run(cmd, input=request, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"Paimon {self.version} failed:\n{r.stderr[-4000:]}"
        result: list[Any] = json.loads(r.stdout.strip().splitlines()[-1])
        return result


def _probe(version: str) -> PaimonJava:
    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("java and javac (JDK 17+) are needed for the Paimon Java interop tests")
    paimon = _paimon_jar() if version == "0.9.0" else maven_jar(*NEWEST)
    classpath = os.pathsep.join(str(j) for j in [paimon, *_pyspark_jars()])
    sources = [PROBE_SOURCE] if version == "0.9.0" else [PROBE_SOURCE, NEWEST_OPS_SOURCE]
    text = b"".join(src.read_bytes() for src in sources)
    digest = hashlib.sha256(text + classpath.encode()).hexdigest()[:16]
    classes = CACHE / f"probe-{digest}"
    if not (classes / "PaimonProbe.class").exists():
        tmp = CACHE / f"probe-{digest}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        cmd = ["javac", "-nowarn", "-d", str(tmp), "-cp", classpath, *map(str, sources)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"javac PaimonProbe.java ({version}) failed:\n{r.stderr[-4000:]}"
        shutil.rmtree(classes, ignore_errors=True)
        tmp.replace(classes)
    return PaimonJava(os.pathsep.join([str(classes), classpath]), version)


_PROBES: dict[str, PaimonJava] = {}


def _cached_probe(version: str) -> PaimonJava:
    if version not in _PROBES:
        _PROBES[version] = _probe(version)
    return _PROBES[version]


@pytest.fixture(scope="session", params=VERSIONS, ids=[f"paimon{v}" for v in VERSIONS])
def paimon_java(request: pytest.FixtureRequest) -> PaimonJava:
    """Each Paimon release's classes with the compiled probe (skips without a JDK)."""
    return _cached_probe(request.param)


@pytest.fixture(scope="session")
def paimon_newest() -> PaimonJava:
    """The newest Paimon release's classes with the compiled probe."""
    return _cached_probe(VERSIONS[-1])
