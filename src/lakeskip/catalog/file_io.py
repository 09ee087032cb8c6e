"""All table I/O goes through :class:`FileIO`, a picklable wrapper over a ``pyarrow.fs``.

The one operation the commit protocol needs beyond plain reads and writes is an **atomic
create-if-absent** (:meth:`FileIO.try_create`): the file appears complete or not at all, and
of several concurrent creators exactly one wins. How each filesystem provides it:

* **local** (``LocalFileSystem``): the content is written to a unique temp file in the same
  directory, then ``os.link(temp, target)``; ``link`` fails with ``EEXIST`` if the target
  exists, atomically, on every POSIX filesystem (and NTFS). NFS gives the same guarantee
  from v3 on. Filesystems without hard links fall back to ``O_CREAT | O_EXCL``, which is
  still exclusive but briefly exposes a partly written file (readers retry on a bad
  snapshot file, see :mod:`lakeskip.catalog.format.snapshot`).
* **HDFS** (``HadoopFileSystem``): write a temp file, then ``rename``; HDFS renames never
  overwrite and are atomic in the NameNode.
* **S3** (``pyarrow.fs.S3FileSystem``): pyarrow exposes no conditional put, so the create
  goes through ``obstore``'s create-only put (``PUT`` with ``If-None-Match: *``: the store
  answers 412 when the key exists), with the endpoint, region and credentials of the
  pyarrow filesystem. Concurrent writers on any S3 that honours conditional writes (AWS S3
  since 2024, MinIO, moto) are then safe. ``LAKESKIP_CONDITIONAL_WRITES=false`` in the
  environment switches it off (for a store that ignores the header: it would be unsafe
  anyway).
* **other object stores** (GCS, Azure via ``pyarrow.fs``): :meth:`try_create` can only
  check, then write. That is safe for one writer at a time per table; concurrent writers
  need an external lock (Paimon uses a Hive/JDBC catalog lock or a REST catalog for the
  same reason). :attr:`FileIO.atomic_create` tells which case applies.

Example:
    >>> import tempfile
    >>> io, root = FileIO.for_uri(tempfile.mkdtemp())
    >>> io.try_create(root + "/x", b"1"), io.try_create(root + "/x", b"2"), io.read_bytes(root + "/x")
    (True, False, b'1')
"""

from __future__ import annotations

import contextlib
import errno
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from lakeskip.errors import CatalogError

__all__ = ["FileIO", "FileStatus"]


_BUCKET_SCHEMES = ("s3", "s3a", "gs", "gcs", "abfs", "abfss", "az")


def _split_uri(uri: str) -> tuple[str, str]:
    """``(prefix, path)``: object stores keep ``bucket/key`` paths, others ``/path``."""
    scheme, rest = uri.split("://", 1)
    if scheme == "file":
        return "", rest
    if scheme in _BUCKET_SCHEMES:
        return f"{scheme}://", rest
    authority, _, tail = rest.partition("/")
    return f"{scheme}://{authority}", "/" + tail


@dataclass(frozen=True, slots=True)
class FileStatus:
    """One directory entry."""

    path: str
    name: str
    is_dir: bool
    size: int | None


class FileIO:
    """Reads and writes table files on one ``pyarrow.fs`` filesystem.

    Paths given to the methods are paths *within* the filesystem (what
    :meth:`for_uri` returns), e.g. ``/tmp/wh/db.db/t`` or ``bucket/wh/db.db/t``.

    Args:
        filesystem: the pyarrow filesystem.
        uri_prefix: scheme and authority to put back in front of a path to get a URI
            (``"s3://"``, ``"hdfs://nn:8020"``; empty for local paths).
    """

    __slots__ = ("_stores", "filesystem", "uri_prefix")

    def __init__(self, filesystem: pafs.FileSystem, uri_prefix: str = "") -> None:
        self.filesystem = filesystem
        self.uri_prefix = uri_prefix
        self._stores: dict[str, Any] = {}  # bucket -> obstore S3Store (conditional puts)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FileIO, (self.filesystem, self.uri_prefix))

    def __repr__(self) -> str:
        return f"FileIO({type(self.filesystem).__name__}, {self.uri_prefix!r})"

    @classmethod
    def for_uri(
        cls, uri_or_path: str, filesystem: pafs.FileSystem | None = None
    ) -> tuple[FileIO, str]:
        """The FileIO and in-filesystem path for a local path or a URI.

        Args:
            uri_or_path: ``/abs/path``, ``rel/path``, ``file:///p``, ``s3://bucket/p``,
                ``hdfs://nn:8020/p``, ...
            filesystem: use this filesystem instead of inferring one (the path is then
                taken as-is, after stripping a ``scheme://authority`` prefix if present).
        """
        if "://" not in uri_or_path:
            fs = filesystem if filesystem is not None else pafs.LocalFileSystem()
            path = os.path.abspath(uri_or_path) if filesystem is None else uri_or_path
            return cls(fs), path.rstrip("/") or "/"
        prefix, path = _split_uri(uri_or_path)
        if filesystem is None:
            # Hadoop's s3a:// is S3 to pyarrow; the prefix stays s3a:// for Spark (uri())
            scheme, _, rest = uri_or_path.partition("://")
            pa_uri = f"s3://{rest}" if scheme == "s3a" else uri_or_path
            try:
                filesystem, path = pafs.FileSystem.from_uri(pa_uri)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
                raise CatalogError(f"cannot open filesystem for {uri_or_path}: {e}") from e
        return cls(filesystem, prefix), path.rstrip("/") or "/"

    # -- properties ------------------------------------------------------------------------

    @property
    def is_local(self) -> bool:
        return isinstance(self.filesystem, pafs.LocalFileSystem)

    @property
    def atomic_create(self) -> bool:
        """Whether :meth:`try_create` is atomic against concurrent writers."""
        return (
            self.is_local
            or type(self.filesystem).__name__ == "HadoopFileSystem"
            or self._conditional_s3
        )

    @property
    def _conditional_s3(self) -> bool:
        off = os.environ.get("LAKESKIP_CONDITIONAL_WRITES", "true").strip().lower()
        return type(self.filesystem).__name__ == "S3FileSystem" and off not in (
            "false",
            "0",
            "no",
            "off",
        )

    def uri(self, path: str) -> str:
        """The URI of a path (for engines that open files themselves, e.g. Spark)."""
        if not self.uri_prefix:
            return path
        if self.uri_prefix.endswith("://"):
            return self.uri_prefix + path.lstrip("/")
        return self.uri_prefix + path

    # -- reads -----------------------------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        """Whole file content. Raises ``FileNotFoundError`` if absent."""
        with self.filesystem.open_input_stream(path) as f:
            return bytes(f.read())

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset`` (fewer at the end of the file): one ranged
        read (an HTTP range request on an object store). Raises ``FileNotFoundError``."""
        with self.filesystem.open_input_file(path) as f:
            return bytes(f.read_at(length, offset))

    def exists(self, path: str) -> bool:
        info = self.filesystem.get_file_info(path)
        return bool(info.type != pafs.FileType.NotFound)

    def is_dir(self, path: str) -> bool:
        return bool(self.filesystem.get_file_info(path).type == pafs.FileType.Directory)

    def file_size(self, path: str) -> int:
        info = self.filesystem.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(path)
        return int(info.size)

    def list_dir(self, path: str) -> list[FileStatus]:
        """Direct children of a directory; empty if it does not exist."""
        selector = pafs.FileSelector(path, allow_not_found=True, recursive=False)
        return [
            FileStatus(
                i.path, i.base_name, i.type == pafs.FileType.Directory, i.size if i.size else None
            )
            for i in self.filesystem.get_file_info(selector)
        ]

    def open_input(self, path: str) -> Any:
        """A random-access pyarrow input file (for Parquet)."""
        return self.filesystem.open_input_file(path)

    # -- writes ----------------------------------------------------------------------------

    def mkdirs(self, path: str) -> None:
        self.filesystem.create_dir(path, recursive=True)

    def open_output(self, path: str) -> Any:
        """A pyarrow output stream (overwrites). Parent directories are created."""
        parent = path.rsplit("/", 1)[0]
        if parent:
            self.mkdirs(parent)
        return self.filesystem.open_output_stream(path)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (overwrite) a file; via temp + rename where renames overwrite atomically."""
        parent = path.rsplit("/", 1)[0]
        self.mkdirs(parent)
        if self.is_local:
            tmp = f"{parent}/.{path.rsplit('/', 1)[1]}.{uuid.uuid4().hex}.tmp"
            self._write(tmp, data)
            try:
                os.replace(tmp, path)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            return
        self._write(path, data)

    def _write(self, path: str, data: bytes) -> None:
        with self.filesystem.open_output_stream(path) as out:
            out.write(data)

    def try_create(self, path: str, data: bytes) -> bool:
        """Atomically create ``path`` with ``data`` unless it exists.

        Returns:
            True if this call created the file, False if it already existed.
        """
        parent, name = path.rsplit("/", 1)
        self.mkdirs(parent)
        if self.is_local:
            return self._try_create_local(parent, name, path, data)
        if type(self.filesystem).__name__ == "HadoopFileSystem":
            tmp = f"{parent}/.{name}.{uuid.uuid4().hex}.tmp"
            self._write(tmp, data)
            try:
                self.filesystem.move(tmp, path)
            except OSError:
                self.delete(tmp)
                if self.exists(path):
                    return False
                raise
            return True
        if self._conditional_s3:
            return self._try_create_s3(path, data)
        # Other object stores: no conditional put in pyarrow; see the module docstring.
        if self.exists(path):
            return False
        self._write(path, data)
        return True

    def try_publish(self, path: str, data: bytes) -> bool:
        """:meth:`try_create`, where finding ``path`` already holding exactly ``data`` also
        counts as created: an object store client that retries a create-only PUT whose
        answer was lost (obstore retries on timeouts and 5xx) hears "exists" for its own
        first attempt. The caller's ``data`` must be its own (a snapshot names manifest
        lists of fresh uuids, a schema carries its creation time): equal bytes are then
        this caller's write, and a retry must neither undo what it references nor report
        a lost race.

        Returns:
            True if ``path`` now holds this caller's ``data``, False if it holds other bytes
            (or was deleted meanwhile).
        """
        if self.try_create(path, data):
            return True
        try:
            return self.read_bytes(path) == data
        except FileNotFoundError:  # deleted meanwhile: not ours in any case
            return False

    def _s3_store(self, bucket: str) -> Any:
        """An obstore S3Store for ``bucket`` configured as the pyarrow S3FileSystem is."""
        store = self._stores.get(bucket)
        if store is None:
            from obstore.store import S3Store

            conf = self.filesystem.__reduce__()[1][0]  # S3FileSystem's constructor arguments
            kwargs: dict[str, Any] = {}
            for ours, theirs in (
                ("access_key_id", "access_key"),
                ("secret_access_key", "secret_key"),
                ("session_token", "session_token"),
                ("region", "region"),
                ("endpoint", "endpoint_override"),
            ):
                if conf.get(theirs):
                    kwargs[ours] = conf[theirs]
            endpoint = kwargs.get("endpoint")
            if endpoint and "://" not in endpoint:
                kwargs["endpoint"] = f"{conf.get('scheme') or 'https'}://{endpoint}"
            http = str(kwargs.get("endpoint", "")).startswith("http://")
            if conf.get("force_virtual_addressing"):
                kwargs["virtual_hosted_style_request"] = True
            store = S3Store(bucket, client_options={"allow_http": http}, **kwargs)
            self._stores[bucket] = store
        return store

    def _try_create_s3(self, path: str, data: bytes) -> bool:
        import obstore
        from obstore.exceptions import AlreadyExistsError

        bucket, _, key = path.lstrip("/").partition("/")
        try:
            obstore.put(self._s3_store(bucket), key, data, mode="create")
        except AlreadyExistsError:
            return False
        return True

    def _try_create_local(self, parent: str, name: str, path: str, data: bytes) -> bool:
        tmp = f"{parent}/.{name}.{uuid.uuid4().hex}.tmp"
        self._write(tmp, data)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            return True
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def delete(self, path: str) -> bool:
        """Delete a file; False if it did not exist."""
        try:
            self.filesystem.delete_file(path)
        except FileNotFoundError:
            return False
        except OSError:
            if not self.exists(path):
                return False
            raise
        return True

    def rename(self, source: str, target: str) -> None:
        """Move a file or directory (parent directories of ``target`` are created); atomic
        only where the filesystem renames atomically (local, HDFS)."""
        self.mkdirs(target.rsplit("/", 1)[0])
        self.filesystem.move(source, target)

    def delete_dir(self, path: str) -> None:
        """Delete a directory tree; no error if absent."""
        if self.exists(path):
            self.filesystem.delete_dir(path)

    def walk_files(self, path: str) -> Iterator[FileStatus]:
        """Every file under ``path``, recursively."""
        selector = pafs.FileSelector(path, allow_not_found=True, recursive=True)
        for i in self.filesystem.get_file_info(selector):
            if i.type == pafs.FileType.File:
                yield FileStatus(i.path, i.base_name, False, i.size)
