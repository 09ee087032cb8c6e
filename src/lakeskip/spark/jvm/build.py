"""Building the catalog's jar: ``javac`` against the installed pyspark's ``jars/``, cached.

The Java sources ship as package data (``java/``, ``resources/``). The jar is compiled at
first use -- never shipped prebuilt, because it uses Spark classes that change between Spark
versions -- and cached under ``<cache>/jvm/<key>/lakeskip-spark.jar``, where the key hashes
the pyspark version and every source file. A file lock makes concurrent first uses (pytest
workers, two notebooks) build it once; the jar is published by an atomic rename, so a reader
never sees half a jar.

The cache directory is ``$LAKESKIP_CACHE_DIR``, else ``$XDG_CACHE_HOME/lakeskip``, else
``~/.cache/lakeskip``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from lakeskip.errors import LakeskipError

__all__ = ["JavaBuildError", "build_jar", "cache_dir", "find_javac", "source_files"]

JAR_NAME = "lakeskip-spark.jar"
_PACKAGE = "lakeskip.spark.jvm"


class JavaBuildError(LakeskipError):
    """The catalog jar could not be built (no ``javac``, or it failed)."""


def cache_dir() -> Path:
    explicit = os.environ.get("LAKESKIP_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "lakeskip"


def find_javac() -> str | None:
    """``$JAVA_HOME/bin/javac``, else ``javac`` on the PATH, else ``None``."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "javac"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("javac")


def _package_root() -> Path:
    return Path(str(resources.files(_PACKAGE)))


def source_files() -> list[tuple[str, Path]]:
    """(relative name, path) of every Java source and resource, in a stable order."""
    root = _package_root()
    out = []
    for sub in ("java", "resources"):
        base = root / sub
        out += [
            (f"{sub}/{p.relative_to(base).as_posix()}", p) for p in base.rglob("*") if p.is_file()
        ]
    return sorted(out)


def _pyspark_jars() -> tuple[str, Path]:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    if not jars.is_dir():
        # a pip-installed pyspark has jars/; a SPARK_HOME install keeps them there instead
        spark_home = os.environ.get("SPARK_HOME")
        if spark_home and (Path(spark_home) / "jars").is_dir():
            jars = Path(spark_home) / "jars"
        else:
            raise JavaBuildError(f"no Spark jars found next to pyspark ({jars})")
    return str(pyspark.__version__), jars


def build_key(pyspark_version: str) -> str:
    h = hashlib.sha256(pyspark_version.encode())
    for name, path in source_files():
        h.update(name.encode())
        h.update(path.read_bytes())
    return f"spark-{pyspark_version}-{h.hexdigest()[:16]}"


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as f:
        try:
            import fcntl
        except ImportError:  # Windows: builds still publish atomically, just maybe twice
            yield
            return
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def build_jar(force: bool = False) -> Path:
    """The path of the catalog jar for the installed pyspark, building it if needed.

    Raises:
        JavaBuildError: no ``javac`` (install a JDK 17+, e.g. ``openjdk-17-jdk-headless``),
            or compilation failed.
    """
    version, jars = _pyspark_jars()
    target_dir = cache_dir() / "jvm" / build_key(version)
    jar = target_dir / JAR_NAME
    if jar.is_file() and not force:
        return jar
    javac = find_javac()
    if javac is None:
        raise JavaBuildError("javac not found: install a JDK 17+ to use the lakeskip Spark catalog")
    with _file_lock(target_dir / ".lock"):
        if jar.is_file() and not force:
            return jar  # another process built it while we waited
        with tempfile.TemporaryDirectory(dir=target_dir) as tmp:
            classes = Path(tmp) / "classes"
            classes.mkdir()
            sources = [str(p) for n, p in source_files() if n.endswith(".java")]
            cmd = [
                javac,
                "--release",
                "17",
                "-nowarn",
                "-encoding",
                "UTF-8",
                "-cp",
                str(jars / "*"),
                "-d",
                str(classes),
                *sources,
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                detail = (proc.stderr or proc.stdout).strip().splitlines()
                first = detail[0] if detail else f"exit code {proc.returncode}"
                raise JavaBuildError(f"javac failed building the lakeskip catalog: {first}")
            partial = Path(tmp) / JAR_NAME
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
                for p in sorted(classes.rglob("*.class")):
                    z.write(p, p.relative_to(classes).as_posix())
                for name, p in source_files():
                    if name.startswith("resources/"):
                        z.write(p, name[len("resources/") :])
            os.replace(partial, jar)
    return jar
