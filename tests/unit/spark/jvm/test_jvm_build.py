"""The catalog jar's build step: keyed cache, typed error without javac, fallback announced once."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from lakeskip.errors import LakeskipWarning
from lakeskip.spark.front import catalog_setup
from lakeskip.spark.jvm import build


def test_sources_ship_with_the_package() -> None:
    names = [n for n, _ in build.source_files()]
    assert "java/lakeskip/jvm/LakeCatalog.java" in names
    assert "java/lakeskip/jvm/read/pk/PkMerge.java" in names, "sub-packages ship too"
    assert "resources/META-INF/services/org.apache.spark.sql.sources.DataSourceRegister" in names


def test_key_depends_on_pyspark_version_and_sources(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    a, b = build.build_key("4.3.0"), build.build_key("4.3.1")
    assert a != b and a.startswith("spark-4.3.0-"), "a new pyspark must rebuild the jar"
    src = tmp_path / "java" / "X.java"
    src.parent.mkdir()
    src.write_text("class X {}")
    (tmp_path / "resources").mkdir()
    monkeypatch.setattr(build, "_package_root", lambda: tmp_path)
    before = build.build_key("4.3.0")
    src.write_text("class X { int y; }")
    assert build.build_key("4.3.0") != before, "a changed source must rebuild the jar"


def test_missing_javac_is_a_typed_one_line_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LAKESKIP_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "find_javac", lambda: None)
    with pytest.raises(build.JavaBuildError, match="javac not found") as e:
        build.build_jar()
    assert "\n" not in str(e.value)


def test_fallback_is_announced_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAKESKIP_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "find_javac", lambda: None)
    monkeypatch.setattr(catalog_setup, "_announced", False)
    with pytest.warns(LakeskipWarning, match="falls back to temporary views"):
        assert catalog_setup.catalog_jar() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert catalog_setup.catalog_jar() is None, "the second time: no warning"
