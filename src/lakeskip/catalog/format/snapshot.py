"""Snapshots: ``<table>/snapshot/snapshot-N`` (JSON, Paimon version 3) and the hint files.

::

    snapshot/
      EARLIEST        hint: id of the oldest snapshot (may be stale)
      LATEST          hint: id of the newest snapshot (may be stale: always probe N+1, N+2..)
      snapshot-1      {"version": 3, "id": 1, "schemaId": 0, "baseManifestList": ...,
      snapshot-2       "deltaManifestList": ..., "commitKind": "APPEND",
      ...              "totalRecordCount": ..., "deltaRecordCount": ..., ...}

A snapshot exists once its file exists: it is published with an atomic create-if-absent
(:meth:`~lakeskip.catalog.file_io.FileIO.try_create`), so for every id exactly one committer
wins. The hints are written afterwards and only speed up the search; readers never trust
``LATEST`` blindly (a committer may crash between publishing and updating the hint).

Example:
    >>> s = Snapshot(id=1, schema_id=0, base_manifest_list="b", delta_manifest_list="d",
    ...              commit_kind=CommitKind.APPEND, total_record_count=3, delta_record_count=3,
    ...              commit_user="u", commit_identifier=1, time_millis=0)
    >>> Snapshot.from_json(s.to_json()) == s
    True
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lakeskip.catalog.file_io import FileIO
from lakeskip.errors import CorruptMetadataError

__all__ = ["SNAPSHOT_VERSION", "CommitIdentity", "CommitKind", "Snapshot", "SnapshotManager"]

SNAPSHOT_VERSION = 3
SNAPSHOT_DIR = "snapshot"
SNAPSHOT_PREFIX = "snapshot-"
TAG_DIR = "tag"
TAG_PREFIX = "tag-"
LATEST = "LATEST"
EARLIEST = "EARLIEST"
BATCH_COMMIT_IDENTIFIER = 0x7FFFFFFFFFFFFFFF


@dataclass(frozen=True, slots=True)
class CommitIdentity:
    """Who commits, and which of its commits this is: a snapshot's ``commitUser`` and
    ``commitIdentifier``, as Paimon's streaming writers set them (a Spark streaming query's
    id and micro-batch id). A commit of identity ``(u, n)`` is already in the table when a
    snapshot of user ``u`` with identifier ``>= n`` is (Paimon's
    ``FileStoreCommitImpl.filterCommitted``): a batch replayed after a crash commits
    nothing twice. Batch writes have a fresh user and :data:`BATCH_COMMIT_IDENTIFIER`.

    >>> CommitIdentity("query-1", 7)
    CommitIdentity(user='query-1', identifier=7)
    """

    user: str
    identifier: int


class CommitKind(enum.Enum):
    """``commitKind`` of a snapshot."""

    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One snapshot file."""

    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_kind: CommitKind
    total_record_count: int | None
    delta_record_count: int | None
    commit_user: str
    commit_identifier: int
    time_millis: int
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    index_manifest: str | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: dict[str, str] | None = field(default=None, compare=False)
    next_row_id: int | None = None
    uuid: str | None = None
    version: int = SNAPSHOT_VERSION

    def to_json(self) -> str:
        obj: dict[str, Any] = {"version": self.version}
        if self.uuid is not None:
            obj["uuid"] = self.uuid
        obj.update(
            {
                "id": self.id,
                "schemaId": self.schema_id,
                "baseManifestList": self.base_manifest_list,
                "baseManifestListSize": self.base_manifest_list_size,
                "deltaManifestList": self.delta_manifest_list,
                "deltaManifestListSize": self.delta_manifest_list_size,
                "changelogManifestList": self.changelog_manifest_list,
                "indexManifest": self.index_manifest,
                "commitUser": self.commit_user,
                "commitIdentifier": self.commit_identifier,
                "commitKind": self.commit_kind.value,
                "timeMillis": self.time_millis,
                "totalRecordCount": self.total_record_count,
                "deltaRecordCount": self.delta_record_count,
                "changelogRecordCount": self.changelog_record_count,
                "watermark": self.watermark,
                "statistics": self.statistics,
                "properties": self.properties,
                "nextRowId": self.next_row_id,
            }
        )
        # Jackson NON_NULL: Paimon omits absent optional fields
        return json.dumps({k: v for k, v in obj.items() if v is not None}, indent=2)

    @classmethod
    def from_json(cls, text: str | bytes) -> Snapshot:
        """Parse a snapshot file.

        Raises:
            CorruptMetadataError: not a snapshot we can read.
        """
        try:
            o = json.loads(text)
            return cls(
                id=int(o["id"]),
                schema_id=int(o["schemaId"]),
                base_manifest_list=str(o["baseManifestList"]),
                delta_manifest_list=str(o["deltaManifestList"]),
                commit_kind=CommitKind(o["commitKind"]),
                total_record_count=_opt_int(o.get("totalRecordCount")),
                delta_record_count=_opt_int(o.get("deltaRecordCount")),
                commit_user=str(o.get("commitUser", "")),
                commit_identifier=int(o.get("commitIdentifier", BATCH_COMMIT_IDENTIFIER)),
                time_millis=int(o.get("timeMillis", 0)),
                base_manifest_list_size=_opt_int(o.get("baseManifestListSize")),
                delta_manifest_list_size=_opt_int(o.get("deltaManifestListSize")),
                changelog_manifest_list=o.get("changelogManifestList"),
                index_manifest=o.get("indexManifest"),
                changelog_record_count=_opt_int(o.get("changelogRecordCount")),
                watermark=_opt_int(o.get("watermark")),
                statistics=o.get("statistics"),
                properties=o.get("properties"),
                next_row_id=_opt_int(o.get("nextRowId")),
                uuid=o.get("uuid"),
                version=int(o.get("version", 1)),
            )
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptMetadataError(f"cannot parse snapshot: {e}") from e


def tag_files(io: FileIO, root: str) -> Iterator[tuple[str, str, bytes]]:
    """(tag name, path, content) of every tag file under a table (or branch) root; a tag
    deleted while listing is skipped. Parsing, and what a corrupt one means, is the
    caller's."""
    for st in io.list_dir(f"{root}/{TAG_DIR}"):
        if st.is_dir or not st.name.startswith(TAG_PREFIX):
            continue
        try:
            data = io.read_bytes(st.path)
        except FileNotFoundError:  # deleted meanwhile
            continue
        yield st.name[len(TAG_PREFIX) :], st.path, data


def _opt_int(v: Any) -> int | None:
    return None if v is None else int(v)


class SnapshotManager:
    """Finds, reads and publishes the snapshots of one table."""

    def __init__(self, file_io: FileIO, table_path: str) -> None:
        self.file_io = file_io
        self.dir = f"{table_path}/{SNAPSHOT_DIR}"

    def path(self, snapshot_id: int) -> str:
        return f"{self.dir}/{SNAPSHOT_PREFIX}{snapshot_id}"

    def list_ids(self) -> list[int]:
        ids = []
        for st in self.file_io.list_dir(self.dir):
            suffix = st.name[len(SNAPSHOT_PREFIX) :]
            if st.name.startswith(SNAPSHOT_PREFIX) and suffix.isdigit():
                ids.append(int(suffix))
        return sorted(ids)

    def _read_hint(self, name: str) -> int | None:
        try:
            text = self.file_io.read_bytes(f"{self.dir}/{name}").decode("ascii").strip()
            return int(text)
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return None

    def latest_id(self) -> int | None:
        """Id of the newest snapshot: the LATEST hint, then probing forward.

        A stale or missing hint is tolerated; a hint naming a snapshot that does not exist
        (expired, or a garbage hint) falls back to listing the directory.
        """
        hint = self._read_hint(LATEST)
        if hint is not None and hint > 0 and self.file_io.exists(self.path(hint)):
            current = hint
            while self.file_io.exists(self.path(current + 1)):
                current += 1
            return current
        ids = self.list_ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        hint = self._read_hint(EARLIEST)
        if hint is not None and self.file_io.exists(self.path(hint)):
            current = hint
            while current > 1 and self.file_io.exists(self.path(current - 1)):
                current -= 1
            return current
        ids = self.list_ids()
        return ids[0] if ids else None

    def read(self, snapshot_id: int) -> Snapshot:
        """Raises CorruptMetadataError if the snapshot is missing or unreadable."""
        return self.parse(snapshot_id, self.read_bytes(snapshot_id))

    def read_bytes(self, snapshot_id: int) -> bytes:
        """The ``snapshot-<id>`` file as stored; raises CorruptMetadataError if missing."""
        try:
            return self.file_io.read_bytes(self.path(snapshot_id))
        except FileNotFoundError as e:
            raise CorruptMetadataError(f"snapshot {snapshot_id} not found in {self.dir}") from e

    def parse(self, snapshot_id: int, data: bytes) -> Snapshot:
        """``snapshot-<id>``'s bytes as a Snapshot (checked to hold that id).

        Raises:
            CorruptMetadataError: naming the table and the file, and how to read an older
                snapshot.
        """
        try:
            snap = Snapshot.from_json(data)
        except CorruptMetadataError as e:
            raise CorruptMetadataError(self._corrupt(snapshot_id, str(e))) from e
        if snap.id != snapshot_id:
            raise CorruptMetadataError(f"snapshot-{snapshot_id} holds id {snap.id}")
        return snap

    def _corrupt(self, snapshot_id: int, reason: str) -> str:
        root, _, table = self.dir[: -len(SNAPSHOT_DIR) - 1].rpartition("/")
        db = root.rpartition("/")[2]
        name = f"table {db[:-3]}.{table}: " if db.endswith(".db") else ""
        older = (
            f"; to read an older snapshot: SELECT ... VERSION AS OF {snapshot_id - 1} (or "
            "CALL sys.rollback to one)"
            if snapshot_id > 1
            else ""
        )
        return f"{name}snapshot file {self.path(snapshot_id)} is corrupt ({reason}){older}"

    def latest(self) -> Snapshot | None:
        sid = self.latest_id()
        return self.read(sid) if sid is not None else None

    def try_publish(self, snapshot: Snapshot) -> bool:
        """Atomically create ``snapshot-<id>``; False if another committer got that id.

        "Already exists" is checked against the file's bytes (:meth:`FileIO.try_publish`:
        a lost answer to a create-only PUT). The snapshot names manifest lists of fresh
        uuids, so equal bytes are this commit's: it is published, and the caller must not
        delete what it references nor publish it again under the next id.
        """
        ok = self.file_io.try_publish(self.path(snapshot.id), snapshot.to_json().encode("utf-8"))
        if ok:
            self._write_hints(snapshot.id)
        return ok

    def _write_hints(self, snapshot_id: int) -> None:
        # Hints are advisory: a failure here must not fail a published commit.
        try:
            current = self._read_hint(LATEST)
            if current is None or current < snapshot_id:
                self.file_io.write_bytes(f"{self.dir}/{LATEST}", str(snapshot_id).encode())
            if snapshot_id == 1 or self._read_hint(EARLIEST) is None:
                self.file_io.write_bytes(f"{self.dir}/{EARLIEST}", str(snapshot_id).encode())
        except OSError:
            pass
