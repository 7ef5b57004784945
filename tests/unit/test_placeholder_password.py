"""Issue 24, acceptance 9 (interfaces.md "Local trust", the deployed-Redis row): a password that
starts with ``change-me`` (the placeholders of deploy/) is refused before connecting, by
``connect()``, ``tidings.aio.connect()`` and every command (exit 2, one line)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

import tidings
import tidings.aio
from tidings import cli
from tidings.store.errors import TidingsError
from tidings.store.settings import RedisConfig


class Listener:
    """A listening socket that records whether anyone connected to it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]

    def was_connected(self) -> bool:
        try:
            conn, _ = self.sock.accept()
        except BlockingIOError:
            return False
        conn.close()
        return True


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    try:
        yield server
    finally:
        server.sock.close()


def urls(port: int) -> list[str]:
    return [
        f"redis://tidings:change-me-tidings@127.0.0.1:{port}/0",
        f"redis://:change-me@127.0.0.1:{port}/0",
        f"rediss://tidings:change%2Dme-x@127.0.0.1:{port}/0",
        f"redis://127.0.0.1:{port}/0?password=change-me-tidings",
        f"redis+sentinel://tidings:change-me-tidings@127.0.0.1:{port}/mymaster/0",
    ]


def test_connect_refuses_a_placeholder_password_before_connecting(listener: Listener) -> None:
    for url in urls(listener.port):
        with pytest.raises(TidingsError) as refused:
            tidings.connect(url)
        assert refused.value.reason == "placeholder_password", url
        assert "change-me-tidings" not in str(refused.value)
    assert not listener.was_connected()


def test_aio_connect_refuses_it_too(listener: Listener) -> None:
    async def attempt() -> str:
        try:
            await tidings.aio.connect(urls(listener.port)[0])
        except TidingsError as exc:
            return exc.reason
        return "connected"

    assert asyncio.run(attempt()) == "placeholder_password"
    assert not listener.was_connected()


def test_a_real_password_parses() -> None:
    config = RedisConfig.from_url("redis://tidings:s3cret-change-me@127.0.0.1:6379/0")
    assert config.scheme == "redis"


@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["worker"],
        ["scheduler"],
        ["up"],
        ["publish", "system", "--event", "{}"],
        ["agents", "list"],
    ],
)
def test_every_command_exits_2_with_one_line(
    command: list[str], listener: Listener, capsys: pytest.CaptureFixture[str]
) -> None:
    url = urls(listener.port)[0]
    assert cli.main([*command, "--redis-url", url]) == 2  # stdout is no terminal: JSON
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert "placeholder password" in line and "deploy/redis.conf" in line
    assert json.loads(captured.out)["reason"] == "placeholder_password"
    assert not listener.was_connected()


def test_status_from_the_environment_exits_2_before_any_connection(listener: Listener) -> None:
    env = {"PATH": "/usr/bin:/bin", "TIDINGS_REDIS_URL": urls(listener.port)[0]}
    done = subprocess.run(
        [sys.executable, "-m", "tidings", "status"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(
        "tidings: placeholder_password: TIDINGS_REDIS_URL carries a placeholder password"
    )
    assert not listener.was_connected()


def test_a_placeholder_in_the_control_store_url_is_refused_too(listener: Listener) -> None:
    real = f"redis://tidings:s3cret@127.0.0.1:{listener.port}/0"
    with pytest.raises(TidingsError) as refused:
        tidings.connect(real, broker_url=urls(listener.port)[0])
    assert refused.value.reason == "placeholder_password"
    assert not listener.was_connected()


def test_the_broker_url_option_exits_2(
    listener: Listener, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["status", "--broker-url", urls(listener.port)[0], "--json"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(
        "tidings: placeholder_password: --broker-url carries a placeholder password"
    )
    assert not listener.was_connected()
