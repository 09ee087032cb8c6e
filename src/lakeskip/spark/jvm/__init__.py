"""The JVM side of the lakeskip Spark catalog: Java sources (package data), their build step
and cache (:mod:`.build`). Java only translates and forwards to the Python handler in
:mod:`lakeskip.spark.bridge.catalog_service`."""

from __future__ import annotations

from lakeskip.spark.jvm.build import JavaBuildError, build_jar, find_javac

__all__ = ["JavaBuildError", "build_jar", "find_javac"]
