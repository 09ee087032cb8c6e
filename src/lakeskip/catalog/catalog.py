"""``Catalog``: databases and tables of a Paimon filesystem warehouse.

``<warehouse>/<db>.db/<table>/`` -- the same layout Paimon's filesystem catalog and pypaimon's
``CatalogFactory.create({"warehouse": ...})`` use, so each can read the others' tables.

Identifiers are ``"db.table"`` or ``"table"`` (database ``default``, created on demand).
Every user error raises a typed :mod:`lakeskip.errors` exception with a one-line message, and
is detected before anything is written.

Example:
    >>> import tempfile
    >>> from lakeskip.types import BIGINT, STRING, RowType
    >>> cat = Catalog(tempfile.mkdtemp())
    >>> t = cat.create_table("db1.events", RowType.of(("id", BIGINT), ("dt", STRING)),
    ...                      partition_keys=["dt"])
    Traceback (most recent call last):
    ...
    lakeskip.errors.DatabaseNotFoundError: database not found: db1
    >>> cat.create_database("db1")
    >>> t = cat.create_table("db1.events", RowType.of(("id", BIGINT), ("dt", STRING)),
    ...                      partition_keys=["dt"])
    >>> cat.list_tables("db1"), t.schema.partition_keys, t.latest_snapshot()
    (['events'], ('dt',), None)
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import re
from collections.abc import Mapping, Sequence

import pyarrow.fs as pafs

from lakeskip.catalog.file_io import FileIO
from lakeskip.catalog.format.schema import SchemaManager, TableSchema, check_field_names
from lakeskip.catalog.format.snapshot import Snapshot
from lakeskip.catalog.format.stats import file_column_stats
from lakeskip.catalog.option_checks import (
    check_option_change,
    normalize_option_aliases,
    validate_options,
)
from lakeskip.catalog.options import FILE_INDEX_PREFIX
from lakeskip.catalog.pk.primary_key import PRIMARY_KEY_OPTION, check_primary_key
from lakeskip.catalog.schema_evolution import AddColumn, SchemaChange, apply_changes
from lakeskip.catalog.table import FileStoreTable
from lakeskip.errors import (
    CatalogError,
    ColumnNotFoundError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    SchemaChangeError,
    SqlParseError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from lakeskip.types import Field, RowType, TypeRoot, assign_field_ids, split_identifier

__all__ = [
    "DEFAULT_DATABASE",
    "REPLACED_PREFIX",
    "STAGING_PREFIX",
    "Catalog",
    "TableVersion",
    "hidden_owner",
    "parse_identifier",
]


@dataclasses.dataclass(frozen=True, slots=True)
class TableVersion:
    """A table as read at one moment (see :meth:`Catalog.get_table_version`)."""

    table: FileStoreTable
    snapshot: Snapshot | None
    #: files whose appearance means a newer schema or snapshot
    next_files: tuple[str, ...]
    #: (file, SHA-256 of the bytes read) for the schema and snapshot files used
    read_files: tuple[tuple[str, str], ...]


DEFAULT_DATABASE = "default"
DB_SUFFIX = ".db"
_NAME = re.compile(r"^[^./\\\s`][^./\\`]*$")
_ALTER_RETRIES = 10


#: hidden table directories of a CREATE / REPLACE ... AS SELECT (lakeskip.catalog.ops.staging):
#: ``<prefix><12 hex>_<table name>``, so the table they belong to is known after a crash
STAGING_PREFIX = "__lakeskip_staging_"
REPLACED_PREFIX = "__lakeskip_replaced_"
_HIDDEN = re.compile(r"^(__lakeskip_staging_|__lakeskip_replaced_)[0-9a-f]{12}_(.+)$")


def hidden_owner(directory_name: str) -> tuple[str, str] | None:
    """``(prefix, table name)`` of a staged or replaced table's directory name, else None.

    >>> hidden_owner("__lakeskip_replaced_0123456789ab_t"), hidden_owner("t")
    (('__lakeskip_replaced_', 't'), None)
    """
    m = _HIDDEN.match(directory_name)
    return (m.group(1), m.group(2)) if m else None


#: a table or database name is one directory name (at most 255 bytes on every common
#: filesystem), with room for the hidden prefix of a staged table and the ``.db`` suffix
MAX_NAME_BYTES = 200


def _check_name(kind: str, name: str) -> str:
    """
    >>> _check_name("table", "x" * 401)
    Traceback (most recent call last):
    lakeskip.errors.InvalidArgumentError: table name too long: 401 bytes, at most 200 ('xxxxxxxxxxxxxxxxxxxxxxxx'...)
    """
    if not isinstance(name, str) or not _NAME.match(name) or name != name.strip():
        raise InvalidArgumentError(f"invalid {kind} name: {name!r}")
    hidden = hidden_owner(name)
    size = len((hidden[1] if hidden else name).encode("utf-8"))
    if size > MAX_NAME_BYTES:
        raise InvalidArgumentError(
            f"{kind} name too long: {size} bytes, at most {MAX_NAME_BYTES} ({name[:24]!r}...)"
        )
    return name


def parse_identifier(identifier: str) -> tuple[str, str]:
    """``("db", "table")`` from ``"db.table"``, ``"table"`` or ``"`db`.`table`"``.

    Parts are read as SQL reads them (:func:`~lakeskip.types.split_identifier`): ``a.b``
    backquoted is the one name ``a.b`` (which no table may have), not database ``a``,
    table ``b``.

    >>> parse_identifier("t"), parse_identifier("`d`.`t 1`")
    (('default', 't'), ('d', 't 1'))
    """
    try:
        parts = split_identifier(str(identifier))
    except SqlParseError as e:
        raise InvalidArgumentError(f"invalid table identifier: {e}") from e
    if len(parts) == 1:
        return DEFAULT_DATABASE, _check_name("table", parts[0])
    if len(parts) == 2:
        return _check_name("database", parts[0]), _check_name("table", parts[1])
    raise InvalidArgumentError(f"invalid table identifier: {identifier!r} (expected db.table)")


class Catalog:
    """A filesystem catalog rooted at ``warehouse`` (a local path or any pyarrow URI).

    Args:
        warehouse: ``/path``, ``file:///path``, ``s3://bucket/wh``, ``hdfs://nn/wh``, ...
        filesystem: an explicit pyarrow filesystem (e.g. configured S3 credentials).
    """

    def __init__(self, warehouse: str, filesystem: pafs.FileSystem | None = None) -> None:
        self.warehouse = warehouse
        self.file_io, self.root = FileIO.for_uri(warehouse, filesystem)

    def __repr__(self) -> str:
        return f"Catalog({self.warehouse!r})"

    # -- databases -------------------------------------------------------------------------

    def _db_path(self, name: str) -> str:
        return f"{self.root}/{name}{DB_SUFFIX}"

    def database_exists(self, name: str) -> bool:
        return self.file_io.is_dir(self._db_path(_check_name("database", name)))

    def create_database(self, name: str, ignore_if_exists: bool = False) -> None:
        """Raises DatabaseAlreadyExistsError unless ``ignore_if_exists``."""
        if self.database_exists(name):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistsError(f"database already exists: {name}")
        self.file_io.mkdirs(self._db_path(name))

    def drop_database(
        self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False
    ) -> None:
        """Raises DatabaseNotFoundError / DatabaseNotEmptyError (tables left, no cascade)."""
        if not self.database_exists(name):
            if ignore_if_not_exists:
                return
            raise DatabaseNotFoundError(f"database not found: {name}")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise DatabaseNotEmptyError(
                f"database {name} is not empty ({len(tables)} table(s)); use CASCADE"
            )
        self.file_io.delete_dir(self._db_path(name))

    def list_databases(self) -> list[str]:
        return sorted(
            st.name[: -len(DB_SUFFIX)]
            for st in self.file_io.list_dir(self.root)
            if st.is_dir and st.name.endswith(DB_SUFFIX)
        )

    def _require_database(self, name: str) -> None:
        if self.database_exists(name):
            return
        if name == DEFAULT_DATABASE:
            self.file_io.mkdirs(self._db_path(name))
            return
        raise DatabaseNotFoundError(f"database not found: {name}")

    # -- tables ----------------------------------------------------------------------------

    def _table_path(self, db: str, table: str) -> str:
        return f"{self._db_path(db)}/{table}"

    def table_path(self, identifier: str) -> str:
        """The table's directory (within the filesystem), whether or not it exists."""
        return self._table_path(*parse_identifier(identifier))

    def table_exists(self, identifier: str) -> bool:
        db, name = parse_identifier(identifier)
        return bool(self._schemas(db, name).list_ids())

    def _schemas(self, db: str, name: str) -> SchemaManager:
        """The table's schema files; a missing table is first restored if a REPLACE ... AS
        SELECT crashed between moving it aside and moving the new one in (the old table
        comes back, as if the replace had never started)."""
        schemas = SchemaManager(self.file_io, self._table_path(db, name))
        if not schemas.list_ids() and self.restore_replaced(f"{db}.{name}"):
            schemas = SchemaManager(self.file_io, self._table_path(db, name))
        return schemas

    def restore_replaced(self, identifier: str) -> bool:
        """Move back a table a REPLACE ... AS SELECT moved aside and did not replace (it
        crashed or failed between its two renames); True if there was one. Called when
        a table is looked up and missing."""
        db, name = parse_identifier(identifier)
        if name.startswith((STAGING_PREFIX, REPLACED_PREFIX)):
            return False
        for st in self.file_io.list_dir(self._db_path(db)):
            if not st.is_dir or hidden_owner(st.name) != (REPLACED_PREFIX, name):
                continue
            if not SchemaManager(self.file_io, st.path).list_ids():
                continue
            # OSError: restored by someone else meanwhile, or a new table is there
            with contextlib.suppress(OSError):
                self.file_io.rename(st.path, self._table_path(db, name))
            return True
        return False

    def list_tables(self, database: str) -> list[str]:
        """Tables of a database (directories holding ``schema/schema-N``)."""
        if not self.database_exists(database):
            if database == DEFAULT_DATABASE:
                return []
            raise DatabaseNotFoundError(f"database not found: {database}")
        entries = [st for st in self.file_io.list_dir(self._db_path(database)) if st.is_dir]
        names = {
            st.name
            for st in entries
            # a CREATE/REPLACE ... AS SELECT in progress (lakeskip.catalog.ops.staging)
            if not st.name.startswith((STAGING_PREFIX, REPLACED_PREFIX))
            and SchemaManager(self.file_io, st.path).list_ids()
        }
        for st in entries:  # a REPLACE ... AS SELECT that crashed halfway: the old table
            owner = hidden_owner(st.name)
            if (
                owner is not None
                and owner[0] == REPLACED_PREFIX
                and owner[1] not in names
                and _NAME.match(owner[1])
                and self.table_exists(f"{database}.{owner[1]}")
            ):
                names.add(owner[1])
        return sorted(names)

    def get_table(self, identifier: str) -> FileStoreTable:
        """Raises TableNotFoundError if there is no such table."""
        db, name = parse_identifier(identifier)
        path = self._table_path(db, name)
        schema = self._schemas(db, name).latest()
        if schema is None:
            raise TableNotFoundError(f"table not found: {db}.{name}")
        return FileStoreTable(f"{db}.{name}", path, self.file_io, schema)

    def get_table_version(self, identifier: str) -> TableVersion:
        """The table with its latest snapshot, and the metadata files that prove both still
        current: a reader may reuse what it derived from them while ``next_files`` do not
        exist (no newer schema or snapshot) and ``read_files`` hold the same bytes (a
        dropped and re-created table, or a Paimon rollback that re-used a snapshot id).
        The schema and snapshot are parsed from exactly the bytes named, so no change can
        slip between the two.

        Raises:
            TableNotFoundError: no such table.
        """
        db, name = parse_identifier(identifier)
        path = self._table_path(db, name)
        schemas = self._schemas(db, name)
        ids = schemas.list_ids()
        if not ids:
            raise TableNotFoundError(f"table not found: {db}.{name}")
        schema_bytes = schemas.read_bytes(ids[-1])
        table = FileStoreTable(
            f"{db}.{name}", path, self.file_io, TableSchema.from_json(schema_bytes)
        )
        snapshots = table.snapshot_manager
        sid = snapshots.latest_id()
        read_files = [(schemas.path(ids[-1]), hashlib.sha256(schema_bytes).hexdigest())]
        snapshot = None
        if sid is not None:
            snapshot_bytes = snapshots.read_bytes(sid)
            snapshot = snapshots.parse(sid, snapshot_bytes)
            read_files.append((snapshots.path(sid), hashlib.sha256(snapshot_bytes).hexdigest()))
        return TableVersion(
            table,
            snapshot,
            next_files=(schemas.path(ids[-1] + 1), snapshots.path((sid or 0) + 1)),
            read_files=tuple(read_files),
        )

    def create_table(
        self,
        identifier: str,
        row_type: RowType,
        partition_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        comment: str | None = None,
        ignore_if_exists: bool = False,
        primary_keys: Sequence[str] = (),
    ) -> FileStoreTable:
        """Create a table; field ids become 0..n-1.

        Without a primary key: an append-only table (``bucket = -1``, or ``bucket = N`` with
        a ``bucket-key``). With ``primary_keys`` (or the ``primary-key`` option, as in
        Paimon): a primary-key table with fixed buckets (``bucket`` defaults to 1, see
        :mod:`lakeskip.catalog.pk.primary_key`); key columns become NOT NULL.

        Raises:
            DatabaseNotFoundError: the database does not exist (``default`` is created).
            TableAlreadyExistsError: the table exists and not ``ignore_if_exists``.
            ColumnNotFoundError: a partition key or option names a missing column.
            InvalidOptionError: unknown or malformed option.
            InvalidArgumentError: bad names or partition keys.
        """
        db, name = parse_identifier(identifier)
        opts = normalize_option_aliases(options or {})
        if self.table_exists(identifier):
            if ignore_if_exists:
                return self.get_table(identifier)
            raise TableAlreadyExistsError(f"table already exists: {db}.{name}")
        fields = self._check_columns(row_type)
        keys = self._check_partition_keys(fields, partition_keys)
        pk_option = opts.pop(PRIMARY_KEY_OPTION, None)
        pks = [k.strip() for k in pk_option.split(",")] if pk_option is not None else []
        if pks and primary_keys and [p.lower() for p in pks] != [p.lower() for p in primary_keys]:
            raise InvalidArgumentError(
                f"primary key given twice: ({', '.join(primary_keys)}) and option "
                f"'primary-key' = {pk_option!r}"
            )
        pks = list(primary_keys) or pks
        if pks:
            pk_tuple, fields, opts = check_primary_key(pks, fields, keys, opts)
        else:
            pk_tuple = ()
        validate_options(opts, fields, keys, primary_keys=pk_tuple)
        self._require_database(db)
        path = self._table_path(db, name)
        schema = TableSchema.create(0, fields, keys, opts, comment, primary_keys=pk_tuple)
        if not SchemaManager(self.file_io, path).try_commit(schema):
            if ignore_if_exists:
                return self.get_table(identifier)
            raise TableAlreadyExistsError(f"table already exists: {db}.{name}")
        return FileStoreTable(f"{db}.{name}", path, self.file_io, schema)

    @staticmethod
    def _check_columns(row_type: RowType) -> RowType:
        if len(row_type) == 0:
            raise InvalidArgumentError("a table needs at least one column")
        check_field_names(row_type.names)
        lowered: set[str] = set()
        for f in row_type:
            if f.name.lower() in lowered:
                raise InvalidArgumentError(f"duplicate column name: {f.name}")
            lowered.add(f.name.lower())
        fields, _ = assign_field_ids(((f.name, f.type, f.description) for f in row_type), -1)
        return RowType(fields)

    @staticmethod
    def _check_partition_keys(row_type: RowType, partition_keys: Sequence[str]) -> tuple[str, ...]:
        if isinstance(partition_keys, str):
            partition_keys = [partition_keys]
        keys = []
        for k in partition_keys:
            if not row_type.has(k):
                raise ColumnNotFoundError(
                    f"partition column not found: {k} (columns: {', '.join(row_type.names)})"
                )
            f = row_type.field(k)
            if f.type.is_nested:
                raise InvalidArgumentError(f"partition column {f.name} cannot be {f.type}")
            if f.name in keys:
                raise InvalidArgumentError(f"duplicate partition column: {f.name}")
            keys.append(f.name)
        if keys and len(keys) == len(row_type):
            raise InvalidArgumentError("a table cannot be partitioned by all of its columns")
        return tuple(keys)

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        """Raises TableNotFoundError unless ``ignore_if_not_exists``."""
        db, name = parse_identifier(identifier)
        if not self.table_exists(identifier):
            if ignore_if_not_exists:
                return
            raise TableNotFoundError(f"table not found: {db}.{name}")
        self.file_io.delete_dir(self._table_path(db, name))

    def alter_table(
        self,
        identifier: str,
        set_options: Mapping[str, str] | None = None,
        unset_options: Sequence[str] = (),
    ) -> TableSchema:
        """Set/unset table options, writing the next ``schema-N``.

        Only the keys being set are validated (plus every ``file-index.*`` key, since index
        options are checked together); options of tables written elsewhere are kept as they
        are. Unsetting a key that is not set is a no-op. If nothing changes, no schema is
        written and the current one is returned.

        Raises:
            TableNotFoundError, InvalidOptionError, ColumnNotFoundError, CatalogError
            (a concurrent ALTER kept winning).
        """
        db, name = parse_identifier(identifier)
        path = self._table_path(db, name)
        manager = SchemaManager(self.file_io, path)
        sets = normalize_option_aliases(set_options or {})
        if isinstance(unset_options, str):
            unset_options = [unset_options]
        unset_options = [normalize_option_aliases({k: ""}).popitem()[0] for k in unset_options]
        for _ in range(_ALTER_RETRIES):
            current = manager.latest()
            if current is None:
                raise TableNotFoundError(f"table not found: {db}.{name}")
            merged = dict(current.options)
            merged.update(sets)
            for k in unset_options:
                merged.pop(k, None)
            if merged == dict(current.options):
                return current
            check_option_change(current.options, merged, current.primary_keys)
            to_check = dict(sets)
            if any(k.startswith(FILE_INDEX_PREFIX) for k in merged):
                to_check.update(
                    {k: v for k, v in merged.items() if k.startswith(FILE_INDEX_PREFIX)}
                )
            validate_options(
                to_check, current.row_type, current.partition_keys, current.primary_keys
            )
            new = current.with_options(current.id + 1, merged)
            if manager.try_commit(new):
                return new
        raise CatalogError(f"alter table {db}.{name}: lost the race for the next schema id")

    def add_columns(self, identifier: str, columns: Sequence[Field]) -> TableSchema:
        """Append nullable columns (``ALTER TABLE ADD COLUMNS``): :meth:`alter_columns` with
        one :class:`AddColumn` each; ``columns``' own ids are ignored."""
        return self.alter_columns(
            identifier, [AddColumn((c.name,), c.type, c.description) for c in columns]
        )

    def alter_columns(self, identifier: str, changes: Sequence[SchemaChange]) -> TableSchema:
        """Apply column changes (Paimon schema evolution), writing the next ``schema-N``
        with an atomic create-if-absent (a concurrent ALTER that took the id makes this one
        start over on the new schema).

        Fields keep their ids; files written before keep their schema id and are read by
        field id (:mod:`lakeskip.catalog.schema_evolution` says what is refused). Options
        are validated on the result (an index on a retyped column must suit its new type).

        Raises:
            TableNotFoundError; SchemaChangeError, ColumnNotFoundError, InvalidOptionError:
            the change is refused, the table untouched; CatalogError: lost the race.
        """
        db, name = parse_identifier(identifier)
        manager = SchemaManager(self.file_io, self._table_path(db, name))
        for _ in range(_ALTER_RETRIES):
            current = manager.latest()
            if current is None:
                raise TableNotFoundError(f"table not found: {db}.{name}")
            new = apply_changes(current, changes, f"{db}.{name}")
            old_names = set(current.row_type.names)  # a name the table has is kept
            check_field_names([n for n in new.row_type.names if n not in old_names])
            self._check_no_nulls(db, name, current, new)
            # as alter_table: the index options (checked together) and what the change
            # rewrote; options a table written elsewhere carries are kept as they are
            to_check = {
                k: v
                for k, v in new.options.items()
                if k.startswith(FILE_INDEX_PREFIX)
                or current.options.get(k) != v
                # checked together; a renamed column's fields.<c>.* option with its engine
                or k in ("bucket", "bucket-key", "merge-engine")
            }
            validate_options(to_check, new.row_type, new.partition_keys, new.primary_keys)
            if manager.try_commit(new):
                return new
        raise CatalogError(f"alter table {db}.{name}: lost the race for the next schema id")

    def _check_no_nulls(self, db: str, name: str, current: TableSchema, new: TableSchema) -> None:
        """A column made NOT NULL (allowed by ``alter-column-null-to-not-null.disabled`` =
        ``false``) must hold no NULL in any live file, as its stats prove (a file written
        before the column was added holds only NULL in it). Paimon does not check; a NULL
        read from a NOT NULL column would let Spark fold ``c IS NULL`` away, a wrong answer.

        Raises:
            SchemaChangeError: a file's stats do not prove it; the table is untouched.
        """
        was = {f.id: f for f in current.fields}
        required = [
            f for f in new.fields if not f.type.nullable and f.id in was and was[f.id].type.nullable
        ]
        nested = _nested_made_required(current.row_type, new.row_type)
        if nested:
            raise SchemaChangeError(
                f"Cannot update nested field {nested} of {db}.{name} to NOT NULL: nested "
                "fields have no stats to prove no row holds NULL"
            )
        if not required:
            return
        table = self.get_table(f"{db}.{name}")
        for entry in table.scan_files():
            meta = entry.file
            stats = file_column_stats(meta, table.schema_by_id(meta.schema_id), current)
            for f in required:
                old = was[f.id].name
                nulls = stats[old][2] if old in stats else None
                if nulls != 0:
                    why = "holds NULL" if nulls else "has no null count for it"
                    raise SchemaChangeError(
                        f"Cannot update column {f.name} of {db}.{name} to NOT NULL: data file "
                        f"{meta.file_name} {why}"
                    )

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        """Move a table's directory (local warehouses only: an object store cannot rename a
        directory atomically).

        Raises:
            TableNotFoundError, TableAlreadyExistsError, DatabaseNotFoundError, CatalogError.
        """
        db, name = parse_identifier(identifier)
        new_db, new_name = parse_identifier(new_identifier)
        if not self.table_exists(identifier):
            raise TableNotFoundError(f"table not found: {db}.{name}")
        if self.table_exists(new_identifier):
            raise TableAlreadyExistsError(f"table already exists: {new_db}.{new_name}")
        if not self.database_exists(new_db) and new_db != DEFAULT_DATABASE:
            raise DatabaseNotFoundError(f"database not found: {new_db}")
        if not self.file_io.is_local:
            raise CatalogError(
                "RENAME TABLE is supported on local warehouses only (an object store cannot "
                "rename a directory atomically)"
            )
        target = self._table_path(new_db, new_name)
        self.file_io.rename(self._table_path(db, name), target)


def _nested_made_required(old: RowType, new: RowType, prefix: str = "") -> str | None:
    """The path of a nested ROW field that a change made NOT NULL (by field id), if any."""
    was = {f.id: f for f in old}
    for f in new:
        o = was.get(f.id)
        if o is None or o.type.root is not TypeRoot.ROW or f.type.root is not TypeRoot.ROW:
            continue
        inner_old, inner_new = RowType(o.type.row_fields), RowType(f.type.row_fields)
        old_inner = {g.id: g for g in inner_old}
        for g in inner_new:
            h = old_inner.get(g.id)
            if h is not None and h.type.nullable and not g.type.nullable:
                return f"{prefix}{f.name}.{g.name}"
        deeper = _nested_made_required(inner_old, inner_new, f"{prefix}{f.name}.")
        if deeper is not None:
            return deeper
    return None
