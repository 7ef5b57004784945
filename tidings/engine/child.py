"""One engine child: spawned with the server lock, ready by PING, stopped by SHUTDOWN.

On Linux the child asks the kernel for SIGTERM when its parent dies
(``PR_SET_PDEATHSIG``): a SIGKILLed ``tidings up`` takes its engine down with it, and
the engine's SIGTERM handler syncs the append-only file first. The signal follows the
*thread* that forked the child, so the engine is spawned from the main thread. Where
there is no such signal (macOS) the engine outlives a killed parent; the next ``tidings
up`` finds it by the server lock and shuts it down (:mod:`tidings.engine.orphan`).

The child gets a process group of its own: Ctrl-C in a terminal reaches ``tidings up``,
which stops its worker and scheduler before it shuts the engine down.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tidings.engine.binary import Engine
from tidings.engine.config import BIND
from tidings.engine.state_paths import StatePaths

#: ``prctl(2)`` option asking for a signal when the parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1
#: How long the engine may take to load its data and answer PING (seconds): a large
#: append-only file loads at tens of MB a second.
READY_SECONDS = 120.0
#: Pause between two readiness PINGs (seconds).
READY_POLL = 0.01
#: How long a SHUTDOWN may take (AOF fsync) before the engine is killed (seconds).
SHUTDOWN_SECONDS = 30.0
#: Lines of the engine's log quoted when it fails to start.
LOG_TAIL_LINES = 3


class EngineFailed(Exception):
    """The engine exited or never answered; the message is one line."""


def _die_with_parent() -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def preexec() -> None:  # runs in the child, between fork and exec
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the request was made
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def log_tail(path: Path) -> str:
    try:
        lines = path.read_text("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in lines[-LOG_TAIL_LINES:])


def client(host: str, port: int, secret: str) -> redis.Redis:
    """A plain client that tries once: the caller does its own waiting."""
    return redis.Redis(
        host=host,
        port=port,
        password=secret,
        protocol=2,
        socket_timeout=SHUTDOWN_SECONDS,
        socket_connect_timeout=1.0,
        retry=Retry(NoBackoff(), 0),
    )


class EngineProcess:
    """The engine as a child of this process."""

    def __init__(self, engine: Engine, paths: StatePaths, port: int, secret: str) -> None:
        self.engine = engine
        self.paths = paths
        self.port = port
        self._secret = secret
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://:{self._secret}@{BIND}:{self.port}/0"

    @property
    def secret(self) -> str:
        return self._secret

    @property
    def pid(self) -> int:
        return self.process.pid if self.process is not None else 0

    def spawn(self, server_lock_fd: int, *, parent_death: bool = True) -> None:
        """Start the engine; it inherits ``server_lock_fd`` and so holds the lock."""
        with open(self.paths.log, "ab") as log:
            self.process = subprocess.Popen(
                [self.engine.path, str(self.paths.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(server_lock_fd,),
                process_group=0,
                umask=0o077,
                preexec_fn=_die_with_parent() if parent_death else None,
            )

    def wait_ready(self, timeout: float = READY_SECONDS) -> None:
        """Block until the engine answers PING with our password (it loads its data first)."""
        if self.process is None:
            raise RuntimeError("the engine is not spawned")
        deadline = time.monotonic() + timeout
        with client(BIND, self.port, self._secret) as probe:
            while True:
                if self.process.poll() is not None:
                    raise EngineFailed(
                        f"the store engine exited with {self.process.returncode}"
                        f": {log_tail(self.paths.log)}"
                    )
                with contextlib.suppress(
                    redis.ConnectionError, redis.BusyLoadingError, redis.TimeoutError
                ):
                    try:
                        if probe.ping():
                            return
                    except redis.ResponseError as exc:  # MISCONF: it cannot write its AOF
                        self.kill()
                        raise EngineFailed(f"the store engine refuses writes ({exc})") from None
                if time.monotonic() > deadline:
                    self.kill()
                    raise EngineFailed(
                        f"the store engine did not answer within {timeout:.0f}s"
                        f": {log_tail(self.paths.log)}"
                    )
                time.sleep(READY_POLL)

    def problem(self) -> str | None:
        """``None`` while the engine runs, else how it ended."""
        if self.process is None or self.process.poll() is None:
            return None
        return (
            f"the store engine (pid {self.process.pid}) exited with "
            f"{self.process.returncode}: {log_tail(self.paths.log)}"
        )

    def shutdown(self) -> None:
        """``SHUTDOWN`` (the append-only file synced), then wait; kill if it hangs."""
        if self.process is None or self.process.poll() is not None:
            return
        with client(BIND, self.port, self._secret) as c:
            try:
                c.shutdown()
            except redis.RedisError:  # refused or unreachable: its SIGTERM handler does the same
                self.process.terminate()
        try:
            self.process.wait(SHUTDOWN_SECONDS)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
