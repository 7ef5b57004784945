"""The public paths, each behind one small interface, so a scenario is written once.

A path is a way an agent reaches tidings: the sync :class:`tidings.Agent` inline or
with a worker, :mod:`tidings.aio`, the CLI, the MCP server, the console's read-only
preview. Where a surface has several reads (``snapshot``, ``stamp``, ``render``,
``prepare_turn``) each read is a path of its own: a rule must hold on every one.

What a path can do is in ``exposes``; a scenario runs on every path that exposes what
it needs:

- ``read``: the channels the agent is shown now, ``{channel: payload}``;
- ``lane``: the attention lane as delivered, marker and comment included (C24, B7);
- ``stamp``: the stamped ``check`` placeholder (C24);
- ``act``: a ``notification`` tool action;
- ``memory``: the memory items the agent is shown (memory-inbox.md M43-M45).

``publishes`` is false only for the console, which reports an overdue alarm instead of
publishing it; ``commits`` says whether a read is a delivery (C23).
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any, ClassVar

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from tests.contract.world import World

Result = dict[str, Any]
READ, LANE, STAMP, ACT, MEMORY = "read", "lane", "stamp", "act", "memory"
#: The lane's own keys, not channels (block-cap.md B7).
MARKER_KEYS = ("overflow", "comment")
MEMORY_KIND = "memory-change"


def channels_of(lane: Result) -> Result:
    return {name: payload for name, payload in lane.items() if name not in MARKER_KEYS}


def attention_of(stamped: Result) -> Result:
    """The attention lane of a stamped result (``{}`` when nothing was stamped)."""
    meta = stamped.get("_meta", {}).get("agent_meta", {})
    attention: Result = meta.get("notifications", {}).get("attention", {})
    return attention


def memory_items(items: list[Result]) -> list[Result]:
    return [item for item in items if item.get("source_kind") == MEMORY_KIND]


class Path:
    """The common interface; each subclass fills in what it exposes."""

    exposes: ClassVar[frozenset[str]] = frozenset()
    publishes: ClassVar[bool] = True
    commits: ClassVar[bool] = True

    def __init__(self, world: World) -> None:
        self.world = world
        self.stack = ExitStack()

    def close(self) -> None:
        self.stack.close()

    # producers: the outside world writes; a path with its own agent may override
    def publish(self, channel: str, envelope: Result) -> None:
        assert self.world.producer.publish(channel, envelope, wait=True)["flushed"] is True

    def publish_event(self, channel: str, event: Result) -> None:
        done = self.world.producer.publish_event(channel, event, wait=True)
        assert done["flushed"] is True, done

    def read(self) -> Result:
        return channels_of(self.lane())

    def lane(self) -> Result:
        raise NotImplementedError

    def stamped(self) -> Result:
        raise NotImplementedError

    def act(self, action: str, input: Result) -> Result:
        raise NotImplementedError

    def memory(self) -> tuple[list[Result], str | None]:
        """The memory items shown, and the turn's ``inbox_text`` where there is a turn."""
        raise NotImplementedError


# -- the Python API: sync, inline or with a worker, and tidings.aio -------------------


class Calls:
    """The agent's calls a Python path makes; sync here, awaited through a portal in aio."""

    def __init__(self, agent: Any, run: Callable[..., Any] | None = None) -> None:
        self.agent = agent
        self.run = run

    def __call__(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self.agent, name)
        if self.run is None:
            return method(*args, **kwargs)
        return self.run(lambda: method(*args, **kwargs))


class PythonPath(Path):
    """One read of the Python API (``snapshot``, ``stamp``, ``render`` or ``turn``)."""

    via: ClassVar[str] = ""
    calls: Calls

    def publish(self, channel: str, envelope: Result) -> None:
        assert self.calls("publish", channel, envelope, wait=True)["flushed"] is True

    def publish_event(self, channel: str, event: Result) -> None:
        assert self.calls("publish_event", channel, event, wait=True)["flushed"] is True

    def read(self) -> Result:
        if self.via == "snapshot":
            snap: Result = self.calls("snapshot")
            return snap
        return channels_of(self.lane())

    def lane(self) -> Result:
        if self.via == "stamp":
            return attention_of(self.stamped())
        if self.via == "render":
            attention: Result = self.calls("render").get("attention", {})
            return attention
        turn = self._turn()
        return dict(turn.attention)

    def stamped(self) -> Result:
        stamped: Result = self.calls("stamp", self.calls("notification", "check"))
        return stamped

    def act(self, action: str, input: Result) -> Result:
        result: Result = self.calls("notification", action, input)
        return result

    def memory(self) -> tuple[list[Result], str | None]:
        turn = self._turn()
        return memory_items(turn.inbox), turn.inbox_text

    def _turn(self) -> Any:
        turn = self.calls("prepare_turn")
        assert not isinstance(turn, dict), turn
        assert self.calls("finish_turn", turn)["status"] == "ok"
        return turn


def _exposes(via: str) -> frozenset[str]:
    if via == "snapshot":
        return frozenset({READ, ACT})
    if via == "stamp":
        return frozenset({READ, LANE, STAMP, ACT})
    if via == "render":
        return frozenset({READ, LANE, ACT})
    return frozenset({READ, LANE, ACT, MEMORY})


class SyncPath(PythonPath):
    """:class:`tidings.Agent`; ``worker``: not inline, with a real worker in this process."""

    worker: ClassVar[bool] = False

    def __init__(self, world: World) -> None:
        super().__init__(world)
        hub = world.open_hub()
        self.stack.callback(hub.close)
        if self.worker:
            hub.start_worker(threads=2)
        self.calls = Calls(hub.agent(world.workdir, inline=not self.worker))


class AioPath(PythonPath):
    """:class:`tidings.aio.AsyncAgent`, its coroutines run on an event loop of its own."""

    worker: ClassVar[bool] = False

    def __init__(self, world: World) -> None:
        super().__init__(world)
        import tidings.aio

        portal: BlockingPortal = self.stack.enter_context(start_blocking_portal())
        hub = portal.call(
            _opened,
            tidings.aio.connect(**world.clients(), settings=world.settings, clock=world.clock),
        )
        self.stack.callback(hub.sync.redis.close)
        self.stack.callback(hub.sync.control.close)
        self.stack.callback(portal.call, hub.aclose)
        if self.worker:
            portal.call(hub.start_worker, 2)
        agent = portal.call(lambda: hub.agent(world.workdir, inline=not self.worker))
        self.calls = Calls(agent, lambda make: portal.call(make))


async def _opened(connecting: Any) -> Any:
    return await connecting


# -- the CLI ---------------------------------------------------------------------------


class CliPath(Path):
    """``tidings check``, ``tidings notification ...``, ``tidings observe`` and ``tidings
    inbox``, run through the CLI's own ``main`` in this process (argument parsing, the
    registered-agent lookup, the printed JSON); only the hub it opens is the world's."""

    exposes = frozenset({READ, LANE, STAMP, ACT, MEMORY})

    def __init__(self, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__(world)
        from tidings.cli import memory, tool

        def open_hub(args: Any) -> Any:
            return world.open_hub(declare_actors=False)

        for module in (tool, memory):
            monkeypatch.setattr(module, "open_hub", open_hub)

    def run(self, *argv: str) -> Result:
        from tidings import cli
        from tidings.cli._common import error_of

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = cli.main([*argv, "--workdir", str(self.world.workdir), "--json"])
        result: Result = json.loads(out.getvalue())
        # an error answer, or a check whose notifications could not be read (C24)
        failed = error_of(result) is not None
        assert code == (1 if failed else 0), (argv, code, result)
        return result

    def lane(self) -> Result:
        return attention_of(self.stamped())

    def stamped(self) -> Result:
        return self.run("check")

    def act(self, action: str, input: Result) -> Result:
        return self.run("notification", action, "--input", json.dumps(input))

    def memory(self) -> tuple[list[Result], str | None]:
        observed = self.run("observe")
        assert observed["status"] == "changed", observed
        return memory_items(self.run("inbox", "--state", "pending")["items"]), None


# -- MCP ---------------------------------------------------------------------------------


class McpPath(Path):
    """``tidings mcp``'s server objects over the MCP SDK's in-memory transport: the
    ``notification`` and ``inbox`` tools and the ``tidings://attention`` resource."""

    exposes = frozenset({READ, LANE, STAMP, ACT, MEMORY})

    def __init__(self, world: World) -> None:
        super().__init__(world)
        from mcp import Client

        import tidings.aio
        from tidings.mcp.server import AgentServer

        self.portal: BlockingPortal = self.stack.enter_context(start_blocking_portal())
        hub = self.portal.call(
            _opened,
            tidings.aio.connect(**world.clients(), settings=world.settings, clock=world.clock),
        )
        self.stack.callback(hub.sync.redis.close)
        self.stack.callback(hub.sync.control.close)
        self.stack.callback(self.portal.call, hub.aclose)
        agent = self.portal.call(lambda: hub.agent(world.workdir))
        server = AgentServer(agent)
        self.client = self.stack.enter_context(
            self.portal.wrap_async_context_manager(Client(server.server))
        )

    def stamped(self) -> Result:
        from tidings.mcp.server import ATTENTION_URI

        read = self.portal.call(
            lambda: self.client.read_resource(ATTENTION_URI, cache_mode="bypass")
        )
        stamped: Result = json.loads(read.contents[0].text)
        return stamped

    def lane(self) -> Result:
        return attention_of(self.stamped())

    def tool(self, name: str, arguments: Result) -> Result:
        called = self.portal.call(lambda: self.client.call_tool(name, arguments))
        result: Result = json.loads(called.content[0].text)
        return result

    def act(self, action: str, input: Result) -> Result:
        return self.tool("notification", {"action": action, "input": input})

    def memory(self) -> tuple[list[Result], str | None]:
        # MCP has no observe call: the orchestrator observes (M10 ``manual``), the
        # agent reads its inbox through the tool.
        assert self.world.producer.observe_memory()["status"] == "changed"
        return memory_items(self.tool("inbox", {"state": "pending"})["items"]), None


class McpCheckPath(McpPath):
    """The same server, read through the ``notification`` tool's ``check``: an MCP client
    stamps nothing, so the server answers it stamped (C24, C45)."""

    def stamped(self) -> Result:
        return self.tool("notification", {"action": "check"})


# -- the console's read-only preview -------------------------------------------------


class ConsolePath(Path):
    """The web console's agent page (``tidings web``): the same read and cap, but it
    commits nothing and writes nothing — an overdue alarm is shown as overdue, the
    spill file is only named."""

    exposes = frozenset({READ, LANE, MEMORY})
    publishes = False
    commits = False

    def page(self) -> Result:
        from tidings.inspection.agent import agent_page

        return agent_page(self.world.hub.runtime, self.world.record)

    def lane(self) -> Result:
        lane: Result = self.page()["lane"] or {}
        return lane

    def memory(self) -> tuple[list[Result], str | None]:
        assert self.world.producer.observe_memory()["status"] == "changed"
        return memory_items(self.page()["inbox"]), None


# -- the registry ------------------------------------------------------------------------


def _python(base: type[PythonPath], name: str, via: str, worker: bool) -> type[Path]:
    attrs = {"via": via, "worker": worker, "exposes": _exposes(via), "commits": via != "snapshot"}
    return type(name, (base,), attrs)


#: Every public path by name. A path added here gets every scenario it exposes.
PATHS: dict[str, type[Path]] = {
    **{
        f"sync-inline.{via}": _python(SyncPath, f"SyncInline_{via}", via, False)
        for via in ("snapshot", "stamp", "render", "turn")
    },
    **{
        f"sync-worker.{via}": _python(SyncPath, f"SyncWorker_{via}", via, True)
        for via in ("snapshot", "stamp", "turn")
    },
    **{
        f"aio.{via}": _python(AioPath, f"Aio_{via}", via, False)
        for via in ("snapshot", "stamp", "render", "turn")
    },
    "aio-worker.turn": _python(AioPath, "AioWorker_turn", "turn", True),
    "cli.check": CliPath,
    "mcp.attention": McpPath,
    "mcp.check": McpCheckPath,
    "console.preview": ConsolePath,
}


@contextlib.contextmanager
def opened(name: str, world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    cls = PATHS[name]
    path = cls(world, monkeypatch) if issubclass(cls, CliPath) else cls(world)
    try:
        yield path
    finally:
        path.close()
