"""Issue 14 (deploy): the units are ``Type=notify`` with ``WatchdogSec=``, so tidings
must send ``READY=1`` once serving and ``WATCHDOG=1`` while healthy, over the
datagram socket systemd names in ``NOTIFY_SOCKET``."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.support.processes import ProcessGroup
from tests.support.redis_server import RedisServer

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server]


@pytest.mark.parametrize("command", [("worker", "--processes", "2"), ("scheduler",)])
def test_ready_then_watchdog_over_notify_socket(
    procs: ProcessGroup, redis_server: RedisServer, tmp_path: Path, command: tuple[str, ...]
) -> None:
    path = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        sock.settimeout(30)
        env = {
            "TIDINGS_REDIS_URL": redis_server.url,
            "NOTIFY_SOCKET": str(path),
            "WATCHDOG_USEC": "400000",
        }
        proc = procs.start(*command, env=env)
        proc.wait_ready()
        received = [sock.recv(256).decode()]
        while "WATCHDOG=1" not in received:
            received.append(sock.recv(256).decode())
        assert received[0] == "READY=1", received
        assert proc.stop() == 0
        # The pool's children inherit no NOTIFY_SOCKET: one READY, from the parent.
        sock.settimeout(0.5)
        rest = []
        try:
            while True:
                rest.append(sock.recv(256).decode())
        except TimeoutError:
            pass
        assert "READY=1" not in rest and set(rest) <= {"WATCHDOG=1", "STOPPING=1"}, rest
