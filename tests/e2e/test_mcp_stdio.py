"""``tidings mcp`` driven by the MCP SDK's own client over stdio (issue 12, acceptance 3;
api.md, Plugging into agent frameworks): a real redis-server, and a real ``tidings
worker`` and ``tidings scheduler`` whose sync tick produces the wake signal."""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
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
from tidings.jobs.view.delivery import check_placeholder

pytestmark = [pytest.mark.redis_server, pytest.mark.e2e]

UPDATE_WITHIN = 3.0
TIDINGS = str(Path(sys.executable).with_name("tidings"))


def write_direct(workdir: Path, name: str, payload: Any) -> None:
    folder = workdir / ".notification"
    folder.mkdir(exist_ok=True)
    temp = folder / f".{name}.tmp"
    temp.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(temp, folder / name)


def structured(result: types.CallToolResult) -> Any:
    return result.structured_content


async def session_run(params: StdioServerParameters, errlog: Any, workdir: Path) -> None:
    updates: list[float] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            assert str(message.params.uri) == "tidings://attention"
            updates.append(time.monotonic())

    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(
            read, write, message_handler=on_message) as session:
        await session.initialize()
        listed = await session.list_tools()
        assert sorted(t.name for t in listed.tools) == ["inbox", "inbox_ignore", "notification"]
        check = await session.call_tool("notification", {"action": "check"})
        assert not check.is_error and structured(check) == check_placeholder()
        assert json.loads(check.content[0].text) == check_placeholder()  # type: ignore[union-attr]
        delay = await session.call_tool("notification", {
            "action": "delay", "input": {"channel": "mcp.x", "seconds": 0}})
        assert not delay.is_error and structured(delay)["status"] == "ok", structured(delay)
        bogus = await session.call_tool("notification", {"action": "explode"})
        assert bogus.is_error
        assert structured(bogus) == {"status": "error",
                                     "message": "Unknown notification action: explode"}
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


def test_acceptance3_sdk_client_over_stdio(redis_server: RedisServer, procs: ProcessGroup,
                                          e2e_env: dict[str, str], tmp_path: Path) -> None:
    redis_server.client().flushall()
    env = {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url}
    workdir = tmp_path / "agent"
    workdir.mkdir()
    with tidings.connect(redis_server.url,
                         settings=tidings.Settings(host=env["TIDINGS_HOST"])) as hub:
        hub.agent(workdir)
    procs.start("worker", "--threads", "2", env=env).wait_ready()
    scheduler = procs.start("scheduler", env=env)
    scheduler.wait_json(lambda line: line.get("status") == "leader")
    params = StdioServerParameters(command=TIDINGS, args=["mcp", "--workdir", str(workdir)],
                                   env=env)
    with (tmp_path / "mcp.stderr").open("w") as errlog:
        anyio.run(session_run, params, errlog, workdir)


def test_unregistered_agent_is_refused_clearly(redis_server: RedisServer,
                                               e2e_env: dict[str, str], tmp_path: Path) -> None:
    import subprocess

    env = {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url}
    done = subprocess.run([TIDINGS, "mcp", "--workdir", str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "tidings agents add --workdir" in done.stderr and "unknown_agent" in done.stderr


async def http_run(url: str) -> None:
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        assert sorted(t.name for t in listed.tools) == ["inbox", "inbox_ignore", "notification"]
        check = await session.call_tool("notification", {"action": "check"})
        assert not check.is_error and structured(check) == check_placeholder()
        bogus = await session.call_tool("notification", {"action": "explode"})
        assert bogus.is_error


def test_http_transport_serves_the_same_on_loopback(
    redis_server: RedisServer, e2e_env: dict[str, str], tmp_path: Path
) -> None:
    import socket
    import subprocess

    from tests.support.polling import wait_until
    from tests.support.redis_server import free_port

    env = {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url}
    with tidings.connect(redis_server.url,
                         settings=tidings.Settings(host=env["TIDINGS_HOST"])) as hub:
        hub.agent(tmp_path)
    port = free_port()

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    with (tmp_path / "http.stderr").open("w") as errlog:
        server = subprocess.Popen([TIDINGS, "mcp", "--workdir", str(tmp_path), "--transport",
                                   "http", "--port", str(port)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=errlog)
        try:
            wait_until(listening, timeout=60, what="tidings mcp --transport http")
            anyio.run(http_run, f"http://127.0.0.1:{port}/mcp")
        finally:
            server.terminate()
            server.wait(30)
