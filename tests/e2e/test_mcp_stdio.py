"""``tidings mcp`` driven by the MCP SDK's own client over stdio (issue 12, acceptance 3;
interfaces.md, Plugging into agent frameworks): a real redis-server, and a real ``tidings
worker`` and ``tidings scheduler`` whose sync tick produces the wake signal."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning

import tidings
from tests.support.processes import ProcessGroup
from tests.support.redis_server import RedisServer
from tidings.jobs.consumer import check_placeholder
from tidings.jobs.consumer.delivery import STAMP_INSTRUCTION

pytestmark = [pytest.mark.redis_server, pytest.mark.e2e]

UPDATE_WITHIN = 3.0
TIDINGS = str(Path(sys.executable).with_name("tidings"))


def write_direct(workdir: Path, name: str, payload: Any) -> None:
    folder = workdir / ".notification"
    folder.mkdir(exist_ok=True)
    temp = folder / f".{name}.tmp"
    temp.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(temp, folder / name)


def stamped_empty_check() -> dict[str, Any]:
    """The tool's ``check`` as MCP answers it: stamped, with nothing visible (C24)."""
    return {
        **check_placeholder(),
        "_meta": {
            "agent_meta": {
                "notifications": {},
                "guidance": {"transient": {}},
                "instruction": STAMP_INSTRUCTION,
            }
        },
    }


def structured(result: types.CallToolResult) -> Any:
    return result.structured_content


async def session_run(params: StdioServerParameters, errlog: Any, workdir: Path) -> None:
    updates: list[float] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            assert str(message.params.uri) == "tidings://attention"
            updates.append(time.monotonic())

    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write, message_handler=on_message) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        assert sorted(t.name for t in listed.tools) == ["inbox", "inbox_ignore", "notification"]
        check = await session.call_tool("notification", {"action": "check"})
        stamped = stamped_empty_check()
        assert not check.is_error and structured(check) == stamped
        assert json.loads(check.content[0].text) == stamped  # type: ignore[union-attr]
        delay = await session.call_tool(
            "notification", {"action": "delay", "input": {"channel": "mcp.x", "seconds": 0}}
        )
        assert not delay.is_error and structured(delay)["status"] == "ok", structured(delay)
        bogus = await session.call_tool("notification", {"action": "explode"})
        assert bogus.is_error
        assert structured(bogus) == {
            "status": "error",
            "reason": "unknown_action",
            "message": "Unknown notification action: explode",
        }
        inbox = await session.call_tool("inbox", {"limit": 5})
        assert structured(inbox) == {"status": "ok", "items": []}
        ignored = await session.call_tool("inbox_ignore", {"event_id": "nope"})
        assert ignored.is_error
        read_back = await session.read_resource("tidings://attention")
        text = read_back.contents[0].text  # type: ignore[union-attr]
        assert json.loads(text)["_notification_placeholder"] is True
        with warnings.catch_warnings():  # the handshake era's subscribe, as clients use today
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await session.subscribe_resource("tidings://attention")
        written = time.monotonic()
        write_direct(workdir, "mcp.x.json", {"header": "1 new item", "data": {"id": 1}})
        with anyio.fail_after(UPDATE_WITHIN + 2):
            while not updates:
                await anyio.sleep(0.02)
        assert updates[0] - written <= UPDATE_WITHIN
        after = await session.read_resource("tidings://attention")
        assert "mcp.x" in after.contents[0].text  # type: ignore[union-attr]


def test_acceptance3_sdk_client_over_stdio(
    redis_server: RedisServer, procs: ProcessGroup, e2e_env: dict[str, str], tmp_path: Path
) -> None:
    redis_server.client().flushall()
    env = {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url}
    workdir = tmp_path / "agent"
    workdir.mkdir()
    with tidings.connect(
        redis_server.url, settings=tidings.Settings(host=env["TIDINGS_HOST"])
    ) as hub:
        hub.agent(workdir)
    procs.start("worker", "--threads", "2", env=env).wait_ready()
    scheduler = procs.start("scheduler", env=env)
    scheduler.wait_json(lambda line: line.get("status") == "leader")
    params = StdioServerParameters(
        command=TIDINGS, args=["mcp", "--workdir", str(workdir)], env=env
    )
    with (tmp_path / "mcp.stderr").open("w") as errlog:
        anyio.run(session_run, params, errlog, workdir)


def test_unregistered_agent_is_refused_clearly(
    redis_server: RedisServer, e2e_env: dict[str, str], tmp_path: Path
) -> None:
    import subprocess

    env = {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url}
    done = subprocess.run(
        [TIDINGS, "mcp", "--workdir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert "tidings agents add --workdir" in done.stderr and "unknown_agent" in done.stderr


async def http_run(url: str, token: str) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        assert sorted(t.name for t in listed.tools) == ["inbox", "inbox_ignore", "notification"]
        check = await session.call_tool("notification", {"action": "check"})
        assert not check.is_error and structured(check) == stamped_empty_check()
        bogus = await session.call_tool("notification", {"action": "explode"})
        assert bogus.is_error


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "e2e", "version": "0"},
    },
}


def initialize_status(port: int, token: str | None) -> int:
    """The HTTP status of a bare POST ``initialize``, with or without the bearer token."""
    import urllib.error
    import urllib.request

    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp",
        method="POST",
        data=json.dumps(INITIALIZE).encode(),
        headers=headers,
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)


@contextlib.contextmanager
def http_server(tmp_path: Path, env: dict[str, str]) -> Iterator[tuple[int, Path]]:
    """``tidings mcp --transport http`` for the agent at ``tmp_path``: its port and stderr."""
    import socket
    import subprocess

    from tests.support.polling import wait_until
    from tests.support.redis_server import free_port

    with tidings.connect(
        env["TIDINGS_REDIS_URL"], settings=tidings.Settings(host=env["TIDINGS_HOST"])
    ) as hub:
        hub.agent(tmp_path)
    port = free_port()

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    stderr = tmp_path / "http.stderr"
    with stderr.open("w") as errlog:
        server = subprocess.Popen(
            [
                TIDINGS,
                "mcp",
                "--workdir",
                str(tmp_path),
                "--transport",
                "http",
                "--port",
                str(port),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
        )
        try:
            wait_until(listening, timeout=60, what="tidings mcp --transport http")
            yield port, stderr
        finally:
            server.terminate()
            server.wait(30)


def test_http_transport_needs_the_token_from_the_environment(
    redis_server: RedisServer, e2e_env: dict[str, str], tmp_path: Path
) -> None:
    """Issue 24 acceptance 5 (interfaces.md "Local trust"): POST ``initialize`` without the token
    is 401, with ``TIDINGS_MCP_TOKEN``'s value 200; the SDK's client works with it."""
    state = tmp_path / "state"
    env = {
        **e2e_env,
        "TIDINGS_REDIS_URL": redis_server.url,
        "TIDINGS_STATE_DIR": str(state),
        "TIDINGS_MCP_TOKEN": "e2e-mcp-token",
    }
    with http_server(tmp_path, env) as (port, _):
        assert initialize_status(port, None) == 401
        assert initialize_status(port, "wrong") == 401
        assert initialize_status(port, "e2e-mcp-token") == 200
        anyio.run(http_run, f"http://127.0.0.1:{port}/mcp", "e2e-mcp-token")
    assert not (state / "mcp-token").exists()


def test_http_transport_generates_a_token_kept_0600_in_the_state_dir(
    redis_server: RedisServer, e2e_env: dict[str, str], tmp_path: Path
) -> None:
    """Issue 24 acceptance 5: without ``TIDINGS_MCP_TOKEN`` the token is generated, kept in
    the state directory's ``mcp-token`` (0600), printed once to stderr, and it works."""
    import stat

    state = tmp_path / "state"
    env = {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url, "TIDINGS_STATE_DIR": str(state)}
    with http_server(tmp_path, env) as (port, stderr):
        kept = state / "mcp-token"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        token = kept.read_text().strip()
        assert stderr.read_text().count(token) == 1
        assert initialize_status(port, None) == 401
        assert initialize_status(port, token) == 200
