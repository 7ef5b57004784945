"""The default store as ``tidings up`` runs it: lock, engine, ``store.json``, stop.

Start: take the owner lock (busy: another ``tidings up`` serves the directory); take
the server lock, stopping an orphaned engine if one holds it; clear what a crash left;
start the engine with the lock; once it answers PING, write ``store.json``. Stop:
SHUTDOWN (append-only file synced), remove ``store.json``, let go of the locks. The
caller stops its worker and scheduler before :meth:`DefaultStore.close`.

A full or read-only state directory is one line with its reason (``state_dir_full``,
``state_dir_read_only``), never a traceback. The data carries a marker (a random id
in the key :data:`MARKER_KEY` and in the file ``store/store-id``): an engine that
loads no marker while the file names one has lost its data, and is refused
(``store_data_missing``) unless ``--fresh`` accepts an empty start.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path

from tidings.engine import config, disk, storefile
from tidings.engine.binary import Engine, EngineUnavailable, find_engine
from tidings.engine.child import EngineFailed, EngineProcess, client
from tidings.engine.config import BIND
from tidings.engine.dir_locks import FileLock
from tidings.engine.orphan import clear_stale, stop_orphan
from tidings.engine.state_paths import StatePaths
from tidings.store.replies import text_or_none
from tidings.store.settings import Settings

#: The key holding the data's marker (issue 30): written with the first data, kept by
#: the AOF; its twin is the file ``store/store-id``.
MARKER_KEY = "tidings:store:id"


class StoreUnavailable(Exception):
    """The default store cannot be served; one line, and a machine-readable reason."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@contextlib.contextmanager
def state_dir_faults(root: Path) -> Iterator[None]:
    """An ``OSError`` of a full or read-only state directory becomes :class:`StoreUnavailable`."""
    try:
        yield
    except OSError as exc:
        reason = disk.reason_of(exc)
        if reason is None:
            raise
        raise StoreUnavailable(
            disk.describe(reason, root, disk.detail(exc)), reason=reason
        ) from None


def port_busy(port: int) -> StoreUnavailable:
    return StoreUnavailable(
        f"port {port} is already in use (another `tidings up`?); choose another with --port",
        reason="port_in_use",
    )


def free_port(requested: int) -> int:
    """``requested`` if nothing listens there (0: any free port), else StoreUnavailable."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((config.BIND, requested))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            raise port_busy(requested) from None
        return int(probe.getsockname()[1])


def claim(paths: StatePaths) -> tuple[FileLock, FileLock]:
    """The owner and server locks of ``paths``, with nothing stale left behind."""
    paths.create()
    owner = FileLock(paths.owner_lock)
    if not owner.acquire():
        raise StoreUnavailable(
            f"another `tidings up` (pid {owner.holder()}) already serves {paths.root}; stop "
            "it first, or give this one its own TIDINGS_STATE_DIR",
            reason="store_busy",
        )
    owner.note_pid()
    server = FileLock(paths.server_lock)
    if not server.acquire() and not stop_orphan(paths, server):
        owner.release()
        raise StoreUnavailable(
            f"an engine left by an earlier `tidings up` still holds "
            f"{paths.server_lock} and does not stop",
            reason="store_busy",
        )
    clear_stale(paths)
    return owner, server


class DefaultStore:
    """The engine this ``tidings up`` serves, and the files that describe it."""

    def __init__(self, settings: Settings, port: int, *, fresh: bool = False) -> None:
        self.paths = StatePaths(settings.state_dir)
        self._settings = settings
        self._port = port
        self._fresh = fresh
        self._marker: str | None = None
        self._locks: tuple[FileLock, FileLock] | None = None
        self.engine: EngineProcess | None = None

    def _started(self) -> EngineProcess:
        if self.engine is None:
            raise RuntimeError("the default store is not started")
        return self.engine

    @property
    def url(self) -> str:
        return self._started().url

    def start(self) -> DefaultStore:
        """Start the engine (it loads its data while the caller goes on; then
        :meth:`wait_ready`). Raises :class:`StoreUnavailable`, leaving nothing running."""
        try:
            engine = find_engine(self._settings.store_server)
        except EngineUnavailable as exc:
            raise StoreUnavailable(str(exc), reason="no_engine") from None
        with state_dir_faults(self.paths.root):
            self._locks = claim(self.paths)
        try:
            self._spawn(engine)
        except BaseException:
            self.close()
            raise
        return self

    def _spawn(self, engine: Engine) -> None:
        with state_dir_faults(self.paths.root):
            port = free_port(self._port)
            secret = config.password(self.paths)
            config.write(
                self.paths, config.render(self.paths, port, secret, self._settings.store_fsync)
            )
            self.engine = EngineProcess(engine, self.paths, port, secret)
            server_fd = self._locks[1].fd if self._locks is not None else None
            if server_fd is None:
                raise RuntimeError("the server lock is not held")
            self.engine.spawn(server_fd)

    def wait_ready(self) -> DefaultStore:
        """Once the engine answers PING, publish ``store.json``."""
        engine = self._started()
        try:
            try:
                engine.wait_ready()
            except EngineFailed as exc:
                # An engine that cannot write its AOF fails to start (or refuses PING
                # with MISCONF): say what is wrong with the directory, if that is it.
                fault = disk.probe(self.paths.data_dir)
                if fault is not None:
                    raise StoreUnavailable(
                        f"{fault[1]}; the store engine said: {exc}", reason=fault[0]
                    ) from None
                raise StoreUnavailable(self._advice(str(exc)), reason="engine_failed") from None
            with state_dir_faults(self.paths.root):
                self._check_marker()
                storefile.write(self.paths.store_file, self.record())
        except BaseException:
            self.close()
            raise
        return self

    def _advice(self, failure: str) -> str:
        """The engine's failure, its advice replaced by one this installation can follow:
        the engine names ``valkey-check-aof``, which the wheel does not install."""
        said, found, _ = failure.partition(": make a backup of your AOF file")
        if not found:
            return failure
        return (
            f"{said}. Keep a copy of {self.paths.data_dir}, then repair it with "
            "`tidings check-aof --fix` (the engine's own checker: it cuts the file at "
            "its first damaged command) and start again"
        )

    def _check_marker(self) -> None:
        """Refuse an engine that came up without the data the state directory had."""
        engine = self._started()
        try:
            kept: str | None = self.paths.marker.read_text("ascii").strip() or None
        except FileNotFoundError:
            kept = None
        with client(BIND, engine.port, engine.secret) as c:
            held = text_or_none(c.get(MARKER_KEY))
            if kept is not None and held != kept and not self._fresh:
                raise StoreUnavailable(
                    f"the data of {self.paths.root} is missing: the store engine loaded no "
                    f"data from {self.paths.data_dir} (its append-only files were deleted or "
                    "replaced). Restore them from a backup, or start empty on purpose with "
                    "`tidings up --fresh`",
                    reason="store_data_missing",
                )
            if held is None:
                held = secrets.token_hex(16)
                c.set(MARKER_KEY, held)
        self._marker = held
        if kept != held:
            self.write_marker()

    def write_marker(self) -> None:
        """``store/store-id``: the id of the data this engine serves."""
        if self._marker is not None:
            storefile.write_private(self.paths.marker, self._marker.encode() + b"\n")

    def record(self) -> storefile.StoreRecord:
        """What ``store.json`` says."""
        engine = self._started()
        return {
            "url": engine.url,
            "pid": engine.pid,
            "engine": engine.engine.label,
            "port": engine.port,
            "owner_pid": os.getpid(),
            "socket": str(self.paths.socket) if self.paths.socket else None,
        }

    def problem(self) -> str | None:
        return self.engine.problem() if self.engine is not None else None

    def kill_engine(self) -> None:
        """SIGKILL a hung engine: it would answer no SHUTDOWN. Nothing acknowledged is
        lost (the engine writes its AOF before it replies; only a power failure loses
        what the page cache holds), and :meth:`close` then finds it gone."""
        if self.engine is not None:
            self.engine.kill()

    def close(self) -> tuple[str, str] | None:
        """Shut the engine down (AOF synced), remove ``store.json``, release the locks.

        Answers ``(reason, one line)`` when ``store.json`` could not be removed (a full
        or read-only state directory): the engine is stopped all the same, and a reader
        does not believe a record whose pid is gone."""
        if self.engine is not None:
            self.engine.shutdown()
        problem = None
        try:
            storefile.remove(self.paths.store_file)
        except OSError as exc:
            reason = disk.reason_of(exc) or "store_error"
            problem = (
                reason,
                disk.describe(reason, self.paths.root, disk.detail(exc))
                + "; its store.json stays behind, and no client believes it",
            )
        if self._locks is not None:
            for lock in reversed(self._locks):
                lock.release()
            self._locks = None
        return problem
