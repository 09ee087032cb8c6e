"""The Python–JVM protocol (:mod:`lakeskip.spark.jvm.protocol`), without Spark: the Java twin is
the generated file, no Java class spells an operation or key itself, every message type
round-trips, and the dispatcher answers bad callbacks and each error kind as specified."""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest

from lakeskip.catalog.kind import table_kind
from lakeskip.catalog.pk.primary_key import PRIMARY_KEY_OPTION
from lakeskip.errors import (
    ColumnNotFoundError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    LakeskipError,
    ProtocolError,
    ProtocolMismatchError,
    SnapshotNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnknownOperationError,
)
from lakeskip.planner.aggregate import AggregateFunction
from lakeskip.spark.bridge.catalog_service import HANDLERS, CatalogService
from lakeskip.spark.bridge.catalog_tables import kind_tag
from lakeskip.spark.jvm import protocol
from lakeskip.spark.jvm.protocol import (
    OPERATIONS,
    PROTOCOL,
    ErrorKind,
    ErrorReply,
    Op,
    TableKindTag,
    decode,
    decode_reply,
    encode,
    error_kind,
)
from lakeskip.spark.jvm.protocol_java import JAVA_PATH, java_source
from lakeskip.spark.read import predicate_json
from lakeskip.types import BIGINT, STRING, RowType, parse_sql_type

#: the root package ``lakeskip.jvm``; its sub-packages are scanned too
JAVA_DIR = JAVA_PATH.parent.parent

#: Java string literals that look like protocol words but are not (file -> literals, why)
_NOT_PROTOCOL = {
    # the catalog option spark.sql.catalog.<name>.warehouse (sent on as the key WAREHOUSE)
    "LakeOps.java": {"warehouse"},
    # the parameter of Spark's FAILED_READ_FILE error
    "ReadErrors.java": {"path"},
    # Spark's data source options "path" / "paths", which newHadoopConfWithOptions leaves out
    "Settings.java": {"path"},
    # the catalog option spark.sql.catalog.<name>.python
    "Brain.java": {"python"},
    # the aggregate "function" of key columns (Paimon's FieldPrimaryKeyAgg), a value, not a key
    "PkMerge.java": {"primary-key"},
    # Spark type names of a procedure's parameter (ProcedureParameter.type), not literal types
    "LakeProcedure.java": {"string", "boolean"},
}
#: a literal key-like first argument of a JSON accessor: a new key written by hand
_ACCESSOR_LITERAL = re.compile(
    r'\.(?:put|putArray|putObject|putNull|set|path|has|hasNonNull|get)\("([a-z][a-z0-9_]*)"'
)
#: the two halves of the predicate tree inside ``filters`` / ``condition``: every key and tag
#: they exchange is in the protocol module, so neither spells a string itself
PREDICATE_JAVA = JAVA_DIR / "read" / "PredicateJson.java"
PREDICATE_PY = Path(predicate_json.__file__)


def _java_files() -> list[Path]:
    files = sorted(JAVA_DIR.rglob("*.java"))
    assert len(files) > 30, f"the Java sources moved: {JAVA_DIR}"
    return files


def _protocol_words() -> set[str]:
    return (
        {o.value for o in Op}
        | set(protocol.wire_keys())
        | {k.value for k in ErrorKind}
        | {m.value for m in protocol.TableProperty}
        | {m.value for m in protocol.PredicateKey}
        | {m.value for m in protocol.PredicateOp}
        | {m.value for m in protocol.LiteralType}
    )


def _java_literals(text: str) -> list[tuple[int, str]]:
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith(("*", "//", "/*")):
            continue
        code = line.split("//", 1)[0]
        out += [(i, m.group(1)) for m in re.finditer(r'"((?:[^"\\]|\\.)*)"', code)]
    return out


def test_protocol_java_is_generated_from_the_python_module() -> None:
    assert JAVA_PATH.read_text(encoding="utf-8") == java_source(), (
        "Protocol.java differs from lakeskip.spark.jvm.protocol: an operation, key or constant was "
        "added or renamed on one side only; run `python -m lakeskip.spark.jvm.protocol_java`"
    )


def test_java_spells_no_operation_or_key_itself() -> None:
    words = _protocol_words()
    found = []
    for path in _java_files():
        if path.name == JAVA_PATH.name:
            continue
        allowed = _NOT_PROTOCOL.get(path.name, set())
        for line, lit in _java_literals(path.read_text(encoding="utf-8")):
            if lit in words and lit not in allowed:
                found.append(f"{path.name}:{line}: {lit!r}")
    assert not found, f"use the Protocol.java constants, not literals: {found}"


def test_java_reads_and_writes_no_key_the_protocol_lacks() -> None:
    found = []
    for path in _java_files():
        if path.name == JAVA_PATH.name:
            continue
        allowed = _NOT_PROTOCOL.get(path.name, set())
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [
                f"{path.name}:{i}: {k!r}"
                for k in _ACCESSOR_LITERAL.findall(line.split("//", 1)[0])
                if k not in allowed
            ]
    assert not found, f"a JSON key written by hand (add it to lakeskip.spark.jvm.protocol): {found}"
    assert _ACCESSOR_LITERAL.findall('n.put("new_key", 1); r.path("x")') == ["new_key", "x"]


def test_the_literal_scan_sees_a_literal_key() -> None:
    """The scan above would catch a key or operation written by hand."""
    code = 'p.put("snapshot_id", 1);\nBridge.ask("plan_scan", p, null); // "token"\n'
    assert [lit for _, lit in _java_literals(code) if lit in _protocol_words()] == [
        "snapshot_id",
        "plan_scan",
    ]


def _python_strings(text: str) -> list[tuple[int, str]]:
    """The string constants of a Python module, but its docstrings and ``__all__``."""
    import ast

    tree = ast.parse(text)
    skip = {
        id(c)
        for a in ast.walk(tree)
        if isinstance(a, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in a.targets)
        for c in ast.walk(a.value)
    }
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
    ]


def test_neither_half_of_the_predicate_tree_spells_a_string_itself() -> None:
    """Every key, operator and literal type of ``filters`` / ``condition`` comes from the
    protocol module (Python) or its generated twin (Java): a tag added or renamed by hand on
    either side fails here, one changed in the protocol module fails the generation test."""
    java = [
        f"PredicateJson.java:{i}: {lit!r}"
        for i, lit in _java_literals(PREDICATE_JAVA.read_text(encoding="utf-8"))
    ]
    assert not java, f"use Protocol.PredicateKey / LiteralType / PredicateOp: {java}"
    py = [
        f"predicate_json.py:{i}: {lit!r}"
        for i, lit in _python_strings(PREDICATE_PY.read_text(encoding="utf-8"))
    ]
    assert not py, f"use lakeskip.spark.jvm.protocol's predicate enums: {py}"
    # the scans see a hand-written tag
    assert _java_literals('n.put(PredicateKey.TYPE, "interval");') == [(1, "interval")]
    assert _python_strings('"""doc"""\n__all__ = ["f"]\nif kind == "interval":\n    pass\n') == [
        (3, "interval")
    ]


def test_python_reads_every_predicate_tag_of_the_protocol() -> None:
    """An operator or literal type added to the protocol is one ``predicate_json`` reads."""
    rt = RowType.of(("a", BIGINT), ("s", STRING))
    samples = {
        protocol.LiteralType.NULL: None,
        protocol.LiteralType.BOOLEAN: True,
        protocol.LiteralType.INTEGER: 5,
        protocol.LiteralType.FLOAT: 1.5,
        protocol.LiteralType.DOUBLE: "NaN",
        protocol.LiteralType.DECIMAL: "1.25",
        protocol.LiteralType.STRING: "x",
        protocol.LiteralType.DATE: 19723,
        protocol.LiteralType.TIMESTAMP_LTZ: 1,
        protocol.LiteralType.TIMESTAMP_NTZ: 1,
        protocol.LiteralType.BINARY: "AAE=",
    }
    assert set(samples) == set(protocol.LiteralType)
    key = protocol.PredicateKey
    unknown = predicate_json.literal_from_json({key.LIT: 1, key.TYPE: "interval"})
    for t, v in samples.items():
        got = predicate_json.literal_from_json({key.LIT: v, key.TYPE: t})
        assert got is not unknown and (got is None) == (t is protocol.LiteralType.NULL), t
    a, five = {key.REF: ["a"]}, {key.LIT: 5, key.TYPE: protocol.LiteralType.INTEGER}
    s = {key.REF: ["s"]}
    leaf = {key.OP: protocol.PredicateOp.EQ, key.ARGS: [a, five]}
    args: dict[protocol.PredicateOp, list[Any]] = {
        protocol.PredicateOp.IN: [a, five, five],
        protocol.PredicateOp.IS_NULL: [a],
        protocol.PredicateOp.IS_NOT_NULL: [a],
        protocol.PredicateOp.STARTS_WITH: [
            s,
            {key.LIT: "x", key.TYPE: protocol.LiteralType.STRING},
        ],
        protocol.PredicateOp.AND: [leaf, leaf],
        protocol.PredicateOp.OR: [leaf, leaf],
        protocol.PredicateOp.NOT: [leaf],
        protocol.PredicateOp.ALWAYS_TRUE: [],
        protocol.PredicateOp.ALWAYS_FALSE: [],
    }
    for op in protocol.PredicateOp:
        node = {key.OP: op, key.ARGS: args.get(op, [a, five])}
        assert predicate_json.translate(node, rt) is not None, op
        assert predicate_json.translate({**node, key.OP: op + "?"}, rt) is None, op
    assert (
        predicate_json.predicate_from_json(
            [
                {
                    key.OP: protocol.PredicateOp.EQ,
                    key.ARGS: [{key.REF: ["m" + protocol.MAP_KEY_SEPARATOR + "k"]}, five],
                }
            ],
            RowType.of(("m", parse_sql_type("MAP<STRING, STRING>"))),
        )
        is not None
    )


def test_python_spells_no_operation_outside_the_protocol_module() -> None:
    import ast

    import lakeskip

    ops = {o.value for o in Op}
    root = Path(lakeskip.__file__).parent
    found = []
    for path in sorted((root / "spark").rglob("*.py")):
        if path.name == "protocol.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        exported = {  # __all__ names a handler after its operation
            id(c)
            for a in ast.walk(tree)
            if isinstance(a, ast.Assign)
            and any(getattr(t, "id", "") == "__all__" for t in a.targets)
            for c in ast.walk(a.value)
        }
        found += [
            f"{path.relative_to(root)}:{node.lineno}: {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in ops and id(node) not in exported
        ]
    assert not found, f"use lakeskip.spark.jvm.protocol.Op: {found}"


def test_every_operation_has_types_a_handler_and_a_java_name() -> None:
    assert set(OPERATIONS) == set(Op) == set(HANDLERS)
    java = JAVA_PATH.read_text(encoding="utf-8")
    for op in Op:
        assert f'static final String {op.name} = "{op.value}";' in java, op


def test_shared_names_match_their_owners() -> None:
    assert protocol.TableProperty.PRIMARY_KEY == PRIMARY_KEY_OPTION
    assert [k.value for k in protocol.AggregateKind] == [f.value for f in AggregateFunction]
    assert f"VERSION = {PROTOCOL};" in JAVA_PATH.read_text(encoding="utf-8")


# -- round trips ---------------------------------------------------------------------------


def _sample(tp: Any, depth: int = 0) -> Any:
    """A value of type ``tp`` with every optional part present (so each key is on the wire)."""
    if tp is Any:
        return [1, "a", None, {"k": [2.5]}]
    origin = typing.get_origin(tp)
    if origin is types.UnionType or origin is typing.Union:
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        return _sample(inner, depth)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return (_sample(args[0], depth), _sample(args[0], depth))
        return tuple(_sample(a, depth) for a in args)
    if origin is Mapping or origin is dict:
        return {"k1": _sample(typing.get_args(tp)[1], depth)}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return tp(**{f.name: _sample(hints[f.name], depth + 1) for f in dataclasses.fields(tp)})
    if isinstance(tp, type) and issubclass(tp, StrEnum):
        return list(tp)[-1]
    return {str: "s", int: 7, bool: True, float: 1.5}[tp]


@pytest.mark.parametrize("tp", protocol.message_types(), ids=lambda t: t.__name__)
def test_every_message_type_round_trips_through_json(tp: type) -> None:
    message = _sample(tp)
    wire = json.loads(json.dumps(encode(message)))
    assert decode(tp, wire) == message
    assert set(wire) == {f.name for f in dataclasses.fields(tp)}, "every key on the wire"


@pytest.mark.parametrize("op", list(Op))
def test_each_reply_of_an_operation_reads_back_as_its_own_type(op: Op) -> None:
    for tp in OPERATIONS[op].replies:
        for message in (_sample(tp), _minimal(tp)):
            wire = json.loads(json.dumps(encode(message)))
            got = decode_reply(op, wire)
            assert type(got) is tp and got == message, f"{op}: {tp.__name__} read as {got!r}"


def _minimal(tp: type) -> Any:
    """``tp`` with its omittable fields left out."""
    full = _sample(tp)
    omit = {f.name: None for f in dataclasses.fields(tp) if f.metadata.get("omit_none")}
    return dataclasses.replace(full, **omit)


def test_omitted_fields_are_absent_and_others_null() -> None:
    desc = _minimal(protocol.TableDescription)
    wire = encode(dataclasses.replace(desc, snapshot_id=None))
    assert "token" not in wire and "system" not in wire and "staged" not in wire
    assert wire["snapshot_id"] is None, "Java tells a missing snapshot by null here"
    assert encode(protocol.RewriteSqlReply(sql=None)) == {"sql": None}


def test_decode_rejects_unknown_keys_missing_keys_and_wrong_types() -> None:
    base = {"protocol": PROTOCOL, "catalog": "c", "namespace": ["db"], "name": "t"}
    assert decode(protocol.TableRequest, base).name == "t"
    with pytest.raises(ProtocolError, match=r"unknown key.*nme"):
        decode(protocol.TableRequest, {**base, "nme": "t"})
    with pytest.raises(ProtocolError, match="name"):
        decode(protocol.TableRequest, {k: v for k, v in base.items() if k != "name"})
    with pytest.raises(ProtocolError, match=r"snapshot_id: expected int"):
        decode(protocol.SnapshotRequest, {**base, "snapshot_id": "3"})
    with pytest.raises(ProtocolError, match="mode: 'upsert' is not one of"):
        decode(protocol.WriteRequest, {**base, "mode": "upsert"})
    # JSON null is a missing key: the default
    assert decode(protocol.LoadTableRequest, {**base, "version": None}).version is None


# -- the dispatcher ------------------------------------------------------------------------


class _NoSpark:
    """CatalogService's Spark session, for handlers that never touch it."""

    _jvm = None


@pytest.fixture
def service() -> CatalogService:
    return CatalogService(_NoSpark())  # type: ignore[arg-type]


def _call(service: CatalogService, op: str, **payload: Any) -> dict[str, Any]:
    body = {"protocol": PROTOCOL, "tag": "q", **payload}
    reply = json.loads(service.call(op, json.dumps(body), None))
    assert isinstance(reply, dict)
    return reply


def _error(reply: dict[str, Any]) -> tuple[str, str]:
    err = decode(ErrorReply, reply).error
    return err.kind.value, err.message


def test_unknown_operation_is_a_typed_error_reply(service: CatalogService) -> None:
    kind, message = _error(_call(service, "drop_everything"))
    assert kind == ErrorKind.UNKNOWN_OPERATION
    assert message == "unknown catalog operation 'drop_everything'"
    assert isinstance(service.errors.pop("q"), UnknownOperationError)


def test_protocol_mismatch_says_rebuild_the_jar(service: CatalogService) -> None:
    reply = json.loads(service.call(Op.LIST_NAMESPACES, json.dumps({"protocol": 0}), None))
    kind, message = _error(reply)
    assert kind == ErrorKind.PROTOCOL_MISMATCH
    assert (
        message == f"lakeskip catalog protocol mismatch (jar 0, Python {PROTOCOL}): rebuild the jar"
    )
    # a payload without the version (an older jar) is a mismatch too, not a crash
    kind, _ = _error(json.loads(service.call(Op.LIST_NAMESPACES, "{}", None)))
    assert kind == ErrorKind.PROTOCOL_MISMATCH


def test_a_request_the_types_do_not_allow_is_a_bad_request(service: CatalogService) -> None:
    kind, message = _error(_call(service, Op.TABLE_EXISTS, catalog="c", name="t", extra=1))
    assert (kind, message) == (ErrorKind.BAD_REQUEST, "table_exists: unknown key(s) extra")
    kind, _ = _error(json.loads(service.call(Op.TABLE_EXISTS, "[1]", None)))
    assert kind == ErrorKind.BAD_REQUEST


def test_each_error_kind_comes_from_its_error_class(
    service: CatalogService, tmp_path: Path
) -> None:
    """Through the real handlers over a warehouse on disk (no Spark needed for these)."""
    cat = {"catalog": "lake", "warehouse": str(tmp_path / "wh")}
    schema = json.dumps(
        {
            "type": "struct",
            "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
        }
    )
    created = _call(service, Op.CREATE_TABLE, **cat, namespace=["default"], name="t", schema=schema)
    assert created["schema"] == "`id` BIGINT" and created["trimmed_keys"] == []
    cases = {
        ErrorKind.TABLE_ALREADY_EXISTS: (
            Op.CREATE_TABLE,
            {"namespace": ["default"], "name": "t", "schema": schema},
        ),
        ErrorKind.TABLE_NOT_FOUND: (Op.LOAD_TABLE, {"namespace": ["default"], "name": "nope"}),
        ErrorKind.DATABASE_NOT_FOUND: (Op.LIST_TABLES, {"namespace": ["nodb"]}),
        ErrorKind.INVALID_ARGUMENT: (Op.LOAD_TABLE, {"namespace": ["a", "b"], "name": "t"}),
        # SnapshotNotFoundError is an InvalidArgumentError, but not a bad table name
        ErrorKind.LAKESKIP: (
            Op.LOAD_TABLE,
            {"namespace": ["default"], "name": "t", "version": "9"},
        ),
    }
    for kind, (op, payload) in cases.items():
        got, message = _error(_call(service, op, **cat, **payload))
        assert got == kind, f"{op} {payload}: {got} ({message})"
    loaded = decode_reply(
        Op.LOAD_TABLE, _call(service, Op.LOAD_TABLE, **cat, namespace=["default"], name="t")
    )
    assert isinstance(loaded, protocol.TableDescription) and loaded.token
    assert loaded.unchanged_while is not None and loaded.unchanged_while.sha256


def test_a_non_lakeskip_failure_is_an_internal_error(service: CatalogService) -> None:
    # no warehouse anywhere and a py4j-less session: the catalog cannot even be named
    kind, _ = _error(_call(service, Op.LIST_NAMESPACES, catalog="lake"))
    assert kind == ErrorKind.INVALID_ARGUMENT
    kind, message = _error(_call(service, Op.REWRITE_SQL, sql="SELEC 1"))
    assert kind == ErrorKind.INTERNAL and message.startswith("AttributeError: ")


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (TableNotFoundError("t"), ErrorKind.TABLE_NOT_FOUND),
        (TableAlreadyExistsError("t"), ErrorKind.TABLE_ALREADY_EXISTS),
        (DatabaseNotFoundError("d"), ErrorKind.DATABASE_NOT_FOUND),
        (InvalidArgumentError("x"), ErrorKind.INVALID_ARGUMENT),
        (ProtocolMismatchError("v"), ErrorKind.PROTOCOL_MISMATCH),
        (UnknownOperationError("o"), ErrorKind.UNKNOWN_OPERATION),
        (ProtocolError("p"), ErrorKind.BAD_REQUEST),
        # subclasses are their own case: Spark must not read them as the base's
        (SnapshotNotFoundError("s"), ErrorKind.LAKESKIP),
        (ColumnNotFoundError("c"), ErrorKind.LAKESKIP),
        (LakeskipError("e"), ErrorKind.LAKESKIP),
        (KeyError("k"), ErrorKind.INTERNAL),
    ],
)
def test_error_kind_of_each_class(error: BaseException, kind: ErrorKind) -> None:
    assert error_kind(error) is kind


def test_a_reply_of_the_wrong_type_or_not_json_is_an_internal_error(
    service: CatalogService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The callback never raises into py4j: a handler's bug is an error reply too."""
    monkeypatch.setitem(
        HANDLERS, Op.LIST_PROCEDURES, lambda ctx, req, arg: protocol.ExistsReply(exists=True)
    )
    kind, message = _error(_call(service, Op.LIST_PROCEDURES))
    assert (kind, message) == (
        ErrorKind.INTERNAL,
        "TypeError: list_procedures handler replied ExistsReply",
    )
    monkeypatch.setitem(
        HANDLERS,
        Op.LIST_PROCEDURES,
        lambda ctx, req, arg: protocol.ListProceduresReply(procedures=(object(),)),  # type: ignore[arg-type]
    )
    kind, message = _error(_call(service, Op.LIST_PROCEDURES))
    assert kind == ErrorKind.INTERNAL and "not JSON serializable" in message


@pytest.mark.parametrize(
    ("options", "keys", "tag"),
    [
        ({}, (), TableKindTag.APPEND),
        ({"deletion-vectors.enabled": "true"}, (), TableKindTag.APPEND_DV),
        ({"bucket": "2"}, ("id",), TableKindTag.PK_MERGE),
        ({"bucket": "2", "merge-engine": "partial-update"}, ("id",), TableKindTag.PK_MERGE),
        ({"bucket": "2", "deletion-vectors.enabled": "true"}, ("id",), TableKindTag.PK_RAW),
        ({"bucket": "2", "merge-engine": "first-row"}, ("id",), TableKindTag.PK_RAW),
    ],
)
def test_each_table_kind_crosses_as_its_tag(
    options: dict[str, str], keys: tuple[str, ...], tag: TableKindTag
) -> None:
    """Java switches on the tag (``LakeTable.readByMerge`` / ``primaryKey``), never on the
    ``primary-key`` property or the merge keys; one tag per kind, and Java's enum has them all."""
    assert kind_tag(table_kind(options, keys)) is tag
    java = JAVA_PATH.read_text(encoding="utf-8")
    assert all(f'{t.name}("{t.value}")' in java for t in TableKindTag)
