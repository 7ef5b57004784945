"""An MCP client (the SDK's ``Client`` over stdio) talking to ``tidings mcp``.

Starts ``tidings up`` (the default store, in a temporary state directory, with its
worker and scheduler) for one agent, then ``tidings mcp --workdir W`` as the client's
stdio server, which finds the store through ``TIDINGS_STATE_DIR`` with no URL: it checks, delays a
channel, listens to ``tidings://attention`` (``Client.listen()``) and hears the update when a
producer writes a channel file. Everything stays on this machine.

    python examples/mcp_client.py
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

TIDINGS = str(Path(sys.executable).with_name("tidings"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def produce(workdir: Path) -> None:
    """A producer that knows nothing of tidings: it writes a channel file atomically."""
    folder = workdir / ".notification"
    folder.mkdir(exist_ok=True)
    (folder / ".mcp.ci.tmp").write_text(json.dumps({"header": "build 42 passed"}))
    os.replace(folder / ".mcp.ci.tmp", folder / "mcp.ci.json")


async def client(server: StdioServerParameters, workdir: Path) -> None:
    async with Client(server) as session:
        print("tools:", [tool.name for tool in (await session.list_tools()).tools])
        check = await session.call_tool("notification", {"action": "check"})
        print("check:", check.structured_content)
        delay = await session.call_tool(
            "notification", {"action": "delay", "input": {"channel": "mcp.lint", "seconds": 60}}
        )
        print("delay:", delay.structured_content)
        # subscriptions/listen: one event each time the attention resource changes.
        async with session.listen(resource_subscriptions=["tidings://attention"]) as updates:
            produce(workdir)
            with anyio.fail_after(10):
                async for event in updates:
                    attention = await session.read_resource(event.uri)
                    break
        live = json.loads(attention.contents[0].text)  # type: ignore[union-attr]
        print("updated:", live["_meta"]["agent_meta"]["notifications"]["attention"])


def wait_for_store(up: subprocess.Popen[bytes], state: Path) -> None:
    """``tidings up`` writes ``store.json`` once its store answers."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and up.poll() is None:
        if (state / "store.json").exists():
            return
        time.sleep(0.1)
    raise RuntimeError("tidings up did not start")


def main() -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        workdir, state = Path(folder) / "agent", Path(folder) / "state"
        workdir.mkdir()
        env = {**os.environ, "TIDINGS_HOST": f"example-{port}", "TIDINGS_STATE_DIR": str(state)}
        env.pop("TIDINGS_REDIS_URL", None)
        up = subprocess.Popen(
            [TIDINGS, "up", "--port", str(port), "--workdir", str(workdir)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_store(up, state)
            server = StdioServerParameters(
                command=TIDINGS,
                args=["mcp", "--workdir", str(workdir)],
                env={"TIDINGS_HOST": env["TIDINGS_HOST"], "TIDINGS_STATE_DIR": str(state)},
            )
            anyio.run(client, server, workdir)
        finally:
            up.terminate()
            up.wait(30)


if __name__ == "__main__":
    main()
