"""``Protocol.java``, the Java twin of :mod:`lakeskip.spark.jvm.protocol`, generated from it.

Every Java class of the catalog spells an operation, a JSON key, an error kind, a shared
property name or a predicate tree's key or tag through these constants, never as a literal;
``tests/unit/spark/jvm/test_protocol.py`` fails when the checked-in file is not what
:func:`java_source` makes. After changing the protocol module, regenerate::

    python -m lakeskip.spark.jvm.protocol_java
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path

from lakeskip.spark.jvm import protocol

__all__ = ["JAVA_PATH", "java_source"]

#: where the generated file lives (with the other Java sources, so javac builds it)
JAVA_PATH = Path(__file__).parent / "java" / "lakeskip" / "jvm" / "bridge" / "Protocol.java"


def _quote(s: str) -> str:
    body = s.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c >= " " else f"\\u{ord(c):04x}" for c in body) + '"'


def _constant(name: str) -> str:
    return name.upper().replace(".", "_").replace("-", "_")


def _strings(doc: str, name: str, values: list[tuple[str, str]]) -> list[str]:
    out = [
        "",
        f"  /** {doc} */",
        f"  public static final class {name} {{",
        f"    private {name}() {{}}",
    ]
    out += [""] + [f"    public static final String {k} = {_quote(v)};" for k, v in values]
    out.append("  }")
    return out


def _enum(doc: str, name: str, enum: type[StrEnum]) -> list[str]:
    return _strings(doc, name, [(m.name, m.value) for m in enum])


def _java_enum(doc: str, name: str, enum: type[StrEnum]) -> list[str]:
    """A Java enum: a {@code switch} over it without {@code default} must name every
    constant, so javac finds every place a new member is not handled."""
    members = [f"    {m.name}({_quote(m.value)})" for m in enum]
    out = ["", f"  /** {doc} */", f"  public enum {name} {{"]
    out += [f"{line}{',' if i < len(members) - 1 else ';'}" for i, line in enumerate(members)]
    out += [
        "",
        "    /** The value on the wire. */",
        "    public final String wire;",
        "",
        f"    {name}(String wire) {{",
        "      this.wire = wire;",
        "    }",
        "",
        "    /** The constant of a wire value (IllegalArgumentException for another). */",
        f"    public static {name} of(String wire) {{",
        f"      for ({name} v : values()) {{",
        "        if (v.wire.equals(wire)) {",
        "          return v;",
        "        }",
        "      }",
        f'      throw new IllegalArgumentException("unknown {name}: " + wire);',
        "    }",
        "  }",
    ]
    return out


def java_source() -> str:
    """The text of ``Protocol.java``."""
    read_only = [op for op, spec in protocol.OPERATIONS.items() if spec.read_only]
    lines = [
        "// Generated from lakeskip/spark/jvm/protocol.py by"
        " `python -m lakeskip.spark.jvm.protocol_java`: do not edit.",
        "package lakeskip.jvm.bridge;",
        "",
        "/**",
        " * The Python–JVM protocol's constants: operations, JSON keys, error kinds, the version",
        " * and shared property names. Every other class uses these, never a literal; the types",
        " * of each operation's JSON are in {@code lakeskip.spark.jvm.protocol}.",
        " */",
        "public final class Protocol {",
        "  private Protocol() {}",
        "",
        "  /** Version of the JSON protocol; Python checks it on every callback. */",
        f"  public static final int VERSION = {protocol.PROTOCOL};",
        "",
        "  /** Spark local property correlating callbacks with the query's Python thread. */",
        f"  public static final String TAG_PROPERTY = {_quote(protocol.TAG_PROPERTY)};",
    ]
    lines += _enum("Operation names ({@link PythonBridge#call}).", "Op", protocol.Op)
    lines += [
        "",
        "  /** Operations that change nothing: safe to ask a restarted brain again. */",
        "  public static final java.util.Set<String> READ_ONLY = java.util.Set.of(",
        *[
            f"      Op.{op.name}{',' if i < len(read_only) - 1 else ');'}"
            for i, op in enumerate(read_only)
        ],
    ]
    lines += _strings(
        "The keys of every request and reply object.",
        "Key",
        [(_constant(k), k) for k in protocol.wire_keys()],
    )
    lines += _enum("The kinds of an error reply.", "ErrorKind", protocol.ErrorKind)
    lines += _enum("The modes of a write.", "WriteMode", protocol.WriteMode)
    lines += _enum("The modes of a staged CTAS / RTAS.", "StageMode", protocol.StageMode)
    lines += _enum("The functions of a pushed aggregate.", "AggregateKind", protocol.AggregateKind)
    lines += _enum(
        "The kinds of an ALTER TABLE column change.", "ColumnChangeKind", protocol.ColumnChangeKind
    )
    lines += _enum("Table property names.", "TableProperty", protocol.TableProperty)
    lines += _java_enum(
        "A table's kind: how its rows live in its files.", "TableKindTag", protocol.TableKindTag
    )
    lines += _enum("The keys of a predicate tree's nodes.", "PredicateKey", protocol.PredicateKey)
    lines += _enum(
        "The Spark V2 predicate names Python translates (sent as Spark names them).",
        "PredicateOp",
        protocol.PredicateOp,
    )
    lines += _enum(
        "The functions a predicate tree names that are no GeneralScalarExpression of Spark's.",
        "PredicateFunction",
        protocol.PredicateFunction,
    )
    lines += _enum("The types of a predicate tree's literals.", "LiteralType", protocol.LiteralType)
    lines += [
        "",
        "  /** Separates column and key in a map-key reference: {@code attrs['device']}. */",
        f"  public static final String MAP_KEY_SEPARATOR = {_quote(protocol.MAP_KEY_SEPARATOR)};",
    ]
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Write ``Protocol.java`` (``--check``: exit 1 if it is not up to date)."""
    text = java_source()
    if "--check" in sys.argv[1:]:
        sys.exit(0 if JAVA_PATH.read_text(encoding="utf-8") == text else 1)
    JAVA_PATH.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
