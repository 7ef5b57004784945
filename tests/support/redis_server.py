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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def redis_binary(name: str = "redis-server") -> str:
    """The binary's path; a missing binary skips, or fails with ``CI=true``."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not on PATH"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


class RedisServer:
    """One redis-server process; ``aof=True`` turns on the append-only file."""

    def __init__(self, directory: Path, *, aof: bool = False, port: int | None = None,
                 extra: tuple[str, ...] = ()) -> None:
        self.directory = directory
        self.aof = aof
        self.port = port or free_port()
        self.extra = extra
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        args = [
            redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--dir", str(self.directory),
            "--appendonly", "yes" if self.aof else "no",
            "--appendfsync", "always" if self.aof else "everysec",
            "--logfile", str(self.directory / "redis.log"), *self.extra,
        ]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                with self.client() as c:
                    c.ping()
                return self
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on {self.port}") from None
                time.sleep(0.02)

    def client(self, **kwargs: Any) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, protocol=2, **kwargs)

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
