"""A producer's write wakes an idle agent at once, on every path (channels.md C27 prompt
visits; issue 33 acceptance 1).

A real ``tidings up`` (worker threads and scheduler in one process) with the sync tick
slowed to 5 s and the full scan to 5 minutes, so neither can be what woke the agent:
each of a ``publish_event``, a whole-envelope ``publish`` and an outside producer's
atomic file write reaches, well inside one interval and exactly once,

- ``wait_for_wake`` of the sync client (agent ``sync``) and of ``tidings.aio`` (agent
  ``aio``: a cursor has one consumer);
- the MCP ``notifications/resources/updated`` of a subscribed ``tidings mcp`` (stdio,
  the SDK's client) for agent ``sync``;
- the console's live stream (``tidings web``'s ``/events`` watching agent ``sync``).

Each path is timed from the producer's call to its arrival; "once" is counted on
the wake stream and on each listener after every change.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import sys
import threading
import time
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning

import tidings
import tidings.aio
from tests.support.groups import TIMING
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup
from tests.support.redis_server import RedisServer, free_port
from tidings.store.keys import AgentKeys

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server]

SYNC_INTERVAL = 5.0
#: "Well inside one interval": a tick cannot have done it, a prompt visit must have.
WITHIN = 2.0
TIDINGS = str(Path(sys.executable).with_name("tidings"))


class Listener:
    """A background thread that records when something arrived."""

    def __init__(self, run: Callable[[Listener], None]) -> None:
        self.arrivals: queue.Queue[float] = queue.Queue()
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, args=(run,), daemon=True)
        self._thread.start()

    def _main(self, run: Callable[[Listener], None]) -> None:
        try:
            run(self)
        except BaseException as exc:  # reported by the test, not lost in the thread
            self.error = exc
            self.ready.set()

    def arrived(self) -> None:
        self.arrivals.put(time.monotonic())

    def next(self, timeout: float) -> float:
        assert self.error is None, self.error
        return self.arrivals.get(timeout=timeout)

    def quiet(self) -> bool:
        return self.arrivals.empty()

    def close(self) -> None:
        self.stop.set()
        self._thread.join(10)


def mcp_listener(env: dict[str, str], workdir: Path, errlog: Any) -> Listener:
    params = StdioServerParameters(
        command=TIDINGS, args=["mcp", "--workdir", str(workdir)], env=env
    )

    async def session(listener: Listener) -> None:
        async def on_message(message: Any) -> None:
            if isinstance(message, types.ResourceUpdatedNotification):
                listener.arrived()

        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, message_handler=on_message) as client,
        ):
            await client.initialize()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.subscribe_resource("tidings://attention")
            listener.ready.set()
            while not listener.stop.is_set():
                await anyio.sleep(0.05)

    return Listener(lambda listener: anyio.run(session, listener))


def console_listener(port: int, agent_id: str) -> Listener:
    def read(listener: Listener) -> None:
        url = f"http://127.0.0.1:{port}/events?agents={agent_id}"
        with urllib.request.urlopen(url, timeout=30) as stream:
            kind = ""
            for raw in stream:
                line = raw.decode().rstrip("\n")
                if line.startswith("retry:"):
                    listener.ready.set()
                elif line.startswith("event: "):
                    kind = line[len("event: ") :]
                elif (
                    line.startswith("data: ")
                    and kind == "agents"
                    and agent_id in json.loads(line[len("data: ") :])
                ):
                    listener.arrived()
                if listener.stop.is_set():
                    return

    return Listener(read)


def aio_waiter(url: str, host: str, workdir: Path) -> tuple[Listener, queue.Queue[str]]:
    """A ``tidings.aio`` client awaiting the ``aio`` agent's wakes, one after another."""
    kinds: queue.Queue[str] = queue.Queue()

    async def wait(listener: Listener) -> None:
        async with tidings.aio.connect(url, settings=tidings.Settings(host=host)) as hub:
            agent = await hub.agent(workdir, agent_id="aio")
            listener.ready.set()
            while not listener.stop.is_set():
                entry = await agent.wait_for_wake(0.5)
                if entry is not None:
                    listener.arrived()
                    kinds.put(str(entry.get("kind")))

    return Listener(lambda listener: asyncio.run(wait(listener))), kinds


def write_direct(workdir: Path, channel: str, payload: Any) -> None:
    folder = workdir / ".notification"
    folder.mkdir(exist_ok=True)
    temp = folder / f".{channel}.tmp"
    temp.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(temp, folder / f"{channel}.json")


@pytest.fixture
def up(
    redis_server: RedisServer, procs: ProcessGroup, e2e_env: dict[str, str], tmp_path: Path
) -> Iterator[dict[str, Any]]:
    """``tidings up``, ``tidings web`` and the three listeners, all started at once."""
    redis_server.client().flushall()
    env = {
        **e2e_env,
        "TIDINGS_REDIS_URL": redis_server.url,
        "TIDINGS_SYNC_INTERVAL": str(SYNC_INTERVAL),
        "TIDINGS_FULL_SCAN_SECONDS": "300",
    }
    e2e_env.update(env)
    workdirs = {"sync": tmp_path / "sync", "aio": tmp_path / "aio"}
    # Registered before the scheduler starts, so it watches them from its first moment
    # (a later registration is watched from the next tick on).
    with tidings.connect(
        redis_server.url, settings=tidings.Settings(host=env["TIDINGS_HOST"])
    ) as hub:
        for name, workdir in workdirs.items():
            workdir.mkdir()
            hub.agent(workdir, agent_id=name)
    port = free_port()
    started = [
        procs.start("up"),
        procs.start("web", "--port", str(port), "--redis-url", redis_server.url),
    ]
    waiter, kinds = aio_waiter(redis_server.url, env["TIDINGS_HOST"], workdirs["aio"])
    with (tmp_path / "mcp.stderr").open("w") as errlog:
        listeners = {"mcp": mcp_listener(env, workdirs["sync"], errlog), "aio": waiter}
        try:
            started[0].wait_json(lambda v: v.get("status") == "leader", timeout=30)
            started[1].wait_ready(30)
            listeners["console"] = console_listener(port, "sync")
            for listener in listeners.values():
                assert listener.ready.wait(30), listener.error
            # The console's first read tells all: its snapshot of the agent, not a wake.
            listeners["console"].next(30)
            for listener in listeners.values():
                while not listener.quiet():
                    listener.next(0)
            yield {"env": env, "workdirs": workdirs, "listeners": listeners, "kinds": kinds}
        finally:
            for listener in listeners.values():
                listener.close()


@TIMING
def test_c27_a_write_wakes_promptly_and_once_on_every_path(
    up: dict[str, Any], redis_server: RedisServer
) -> None:
    env, workdirs, listeners, kinds = up["env"], up["workdirs"], up["listeners"], up["kinds"]
    admin = redis_server.client()
    with tidings.connect(
        redis_server.url, settings=tidings.Settings(host=env["TIDINGS_HOST"])
    ) as hub:
        agents = {name: hub.agent(w, agent_id=name) for name, w in workdirs.items()}
        producers: dict[str, Callable[[str, int], object]] = {
            "publish_event": lambda name, n: agents[name].publish_event(
                "mcp.events", {"body": f"event {n}", "event_id": f"e{n}"}
            ),
            "publish": lambda name, n: agents[name].publish(
                "mcp.whole", {"header": f"{n} items", "data": {"n": n}}
            ),
            "file_write": lambda name, n: write_direct(
                workdirs[name], "mcp.direct", {"header": "outside", "data": {"n": n}}
            ),
        }
        for n, (kind, produce) in enumerate(producers.items(), start=1):
            started = time.monotonic()
            produce("aio", n)
            produce("sync", n)
            entry = agents["sync"].wait_for_wake(WITHIN)
            assert entry is not None, f"{kind}: no wake within {WITHIN} s"
            took = {"sync": time.monotonic() - started}
            for name, listener in listeners.items():
                took[name] = listener.next(WITHIN) - started
            assert max(took.values()) < WITHIN, (kind, took)
            assert kinds.get(timeout=1) == "notification"
            # once: one signal per agent per change, and nothing more arrives
            for name in workdirs:
                key = AgentKeys(name).wake_stream
                wait_until(
                    lambda key=key, n=n: admin.xlen(key) == n,  # type: ignore[misc]
                    timeout=2,
                )
            assert agents["sync"].wait_for_wake(0) is None
        # once: a second arrival for any change would come within these waits
        for name, listener in listeners.items():
            with pytest.raises(queue.Empty):
                listener.next(0.1)
                pytest.fail(f"a second arrival on {name}")
        for name in workdirs:
            assert admin.xlen(AgentKeys(name).wake_stream) == len(producers)
