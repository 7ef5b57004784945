"""Behaviour traces (issue 22's closing figures): the product files on the call stack from a
public entry point to the effect, for five behaviours, as one JSON object.

How a trace is taken, so the next count compares: one inline agent on ``connect("embedded")``
runs the behaviour through public calls while a profile hook (``sys.setprofile``) watches for
the effect's call; at that call the stack is walked outwards and every distinct ``*.py`` file
of ``tidings/ jobs/ store/ scheduler/ workers/`` on it is listed, outermost first
(``files``); ``touched`` counts every such file whose code ran from the entry up to the
effect (the footprint a reader follows, helpers and models included). ``folders`` and
``touched_folders`` count the folders those files lie in, a ``jobs/`` package as one folder
and each other top-level folder as one (``tidings``, ``store``, ``workers``, the ``jobs/``
root).

``behaviours`` (issue 31's figures) follows three behaviours whole, from the first public call
to the last, and lists the folders their code ran in: ``delay_expiry`` (the ``delay`` action,
then the stamped check after the deadline), ``publish`` (``publish_event`` with ``wait``),
``attention_spill`` (the oversized publish, then the stamped check); ``jobs_packages`` counts
the ``jobs/`` packages alone. A trace is
the synchronous chain only (inline dispatch keeps a behaviour in one thread); the MCP
update has three legs (publish, sync tick, the server's watch) and its figure is their union.

- ``delay_expiry``: ``notification("delay")`` for 1 s, then ``notification("check")`` after the
  deadline, stamped as a delivery stamps it (C24), up to the write of
  ``.notification/delay-alarm.json`` (D9).
- ``memory_admission``: ``startup()``, an edit, ``prepare_turn()``, up to the admitting script
  (``memory_admit``, M-rules).
- ``attention_spill``: a channel over the block cap, the stamped check, up to the write
  of its ``logs/`` spill (B8-B10).
- ``blocked_warning``: a file no allowlist rule admits, then the sync tick (its C28 scan), up
  to the buffering of the ``system`` event that warns of it (``buffer_push``).
- ``mcp_update``: ``publish_event`` up to its channel file, the sync tick up to the
  ``wake_signal`` script, and ``AgentServer.watch`` up to ``send_resource_updated`` on a
  subscribed session.

Run: ``.venv/bin/python bench/traces.py``; the same file runs on an older tree with that
tree's interpreter (``/old/.venv/bin/python bench/traces.py``), which is how the figures before
issue 22 were taken.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pygit2

import tidings
import tidings.aio

#: Top-level folders whose files count (the five code packages, as installed links resolve).
PACKAGES = ("tidings", "jobs", "store", "scheduler", "workers")
#: A payload over the largest block cap (block-cap.md B2), so the lane spills.
OVER_CAP = "x" * 30_000
#: ``store/files.py``'s writers: replace a file, create one (a spill's exclusive name, B9).
WRITERS = ("atomic_write", "exclusive_create")


class Trace:
    """A profile hook that keeps the stack of the first call matching ``wanted``."""

    def __init__(self, root: Path, wanted: Callable[[FrameType], bool]) -> None:
        self.root = root
        self.wanted = wanted
        self.files: list[str] | None = None
        self.touched: dict[str, None] = {}

    def hook(self, frame: FrameType, event: str, _arg: object) -> None:
        if event != "call" or self.files is not None:
            return
        rel = self.relative(frame.f_code.co_filename)
        if rel is not None:
            self.touched[rel] = None
        try:
            hit = self.wanted(frame)
        except Exception:
            return
        if hit:
            self.files = self.stack_files(frame)

    def stack_files(self, frame: FrameType | None) -> list[str]:
        seen: list[str] = []
        while frame is not None:
            rel = self.relative(frame.f_code.co_filename)
            if rel is not None and rel not in seen:
                seen.append(rel)
            frame = frame.f_back
        return list(reversed(seen))

    def relative(self, filename: str) -> str | None:
        try:
            rel = Path(filename).resolve().relative_to(self.root)
        except ValueError:
            return None
        return rel.as_posix() if rel.parts[0] in PACKAGES else None


@contextmanager
def tracing(trace: Trace) -> Iterator[Trace]:
    sys.setprofile(trace.hook)
    try:
        yield trace
    finally:
        sys.setprofile(None)


def code_root() -> Path:
    """The tree the running ``tidings`` comes from (an editable install's checkout)."""
    return Path(tidings.__file__).resolve().parent.parent


def writes(suffix: str = "", prefix: str = "") -> Callable[[FrameType], bool]:
    """The effect: a write by ``store/files.py`` of a path with ``prefix`` and ``suffix``."""

    def wanted(frame: FrameType) -> bool:
        code = frame.f_code
        rel = str(frame.f_locals.get("rel", ""))
        return (
            code.co_name in WRITERS
            and code.co_filename.endswith("files.py")
            and rel.startswith(prefix)
            and rel.endswith(suffix)
        )

    return wanted


def script(name: str) -> Callable[[FrameType], bool]:
    """The effect: a Lua script of the store run by name (``Scripts.__call__``)."""

    def wanted(frame: FrameType) -> bool:
        code = frame.f_code
        return (
            code.co_name == "__call__"
            and "scripts" in code.co_filename
            and frame.f_locals.get("name") == name
        )

    return wanted


def memory_repo(path: Path) -> Path:
    repo = pygit2.init_repository(str(path), initial_head="main")
    (path / "MEMORY.md").write_text("remember\n")
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("bench", "bench@example.invalid", 1_700_000_000, 0)
    repo.create_commit("HEAD", sig, sig, "init", repo.index.write_tree(), [])
    return path


def new_agent(hub: Any, base: Path, name: str, memory: bool = False) -> Any:
    workdir = base / name
    workdir.mkdir()
    repo = memory_repo(base / f"{name}-memory") if memory else None
    return hub.agent(workdir, memory_repo=str(repo) if repo else None, inline=True)


def delay_expiry(hub: Any, base: Path, root: Path) -> Trace:
    agent = new_agent(hub, base, "delay")
    agent.publish("soul", {"header": "s", "data": {"count": 7, "events": [1]}}, wait=True)
    agent.notification("delay", {"channel": "soul", "seconds": 1})
    time.sleep(2.2)  # deadlines are whole seconds
    with tracing(Trace(root, writes("delay-alarm.json"))) as trace:
        agent.stamp(agent.notification("check"))
    return trace


def memory_admission(hub: Any, base: Path, root: Path) -> Trace:
    agent = new_agent(hub, base, "memory", memory=True)
    agent.startup()
    (Path(agent.record.memory_repo) / "MEMORY.md").write_text("remember more\n")
    with tracing(Trace(root, script("memory_admit"))) as trace:
        agent.prepare_turn("ordinary")
    return trace


def attention_spill(hub: Any, base: Path, root: Path) -> Trace:
    agent = new_agent(hub, base, "spill")
    agent.publish("mcp.big", {"header": "big", "data": {"text": OVER_CAP}}, wait=True)
    with tracing(Trace(root, writes(prefix="logs/"))) as trace:
        agent.stamp(agent.notification("check"))
    return trace


def blocked_warning(hub: Any, base: Path, root: Path) -> Trace:
    agent = new_agent(hub, base, "blocked")
    (Path(agent.workdir) / ".notification").mkdir(exist_ok=True)
    (Path(agent.workdir) / ".notification" / "stranger.json").write_text('{"header": "x"}')
    with tracing(Trace(root, script("buffer_push"))) as trace:
        sync_host()(agent.runtime, agent.record.host)
    return trace


class Session:
    """A subscribed MCP session that only records the notice."""

    def __init__(self) -> None:
        self.noticed = asyncio.Event()

    async def send_resource_updated(self, uri: object) -> None:
        self.noticed.set()


def sync_host() -> Callable[..., Any]:
    """The sync tick's host visit (``jobs/tick/``; ``jobs/wake/sync.py`` before issue 31,
    ``jobs/wake/tick.py`` before issue 22)."""
    try:
        from tidings.jobs.tick import sync_host as visit
    except ImportError:
        try:
            from tidings.jobs.wake.sync import sync_host as visit  # type: ignore[no-redef]
        except ImportError:
            from tidings.jobs.wake.tick import sync_host as visit  # type: ignore[no-redef]
    return visit


def folder_of(file: str) -> str:
    """``jobs/<package>`` for a file inside a ``jobs/`` package, else its top-level folder."""
    parts = file.split("/")
    return "/".join(parts[:2]) if parts[0] == "jobs" and len(parts) > 2 else parts[0]


def folders(files: list[str]) -> int:
    """How many folders (:func:`folder_of`) ``files`` lie in."""
    return len({folder_of(file) for file in files})


def whole(root: Path, *calls: Callable[[], object]) -> list[str]:
    """The folders whose code ran while ``calls`` ran, in order of first entry."""
    seen: dict[str, None] = {}
    for call in calls:
        trace = Trace(root, lambda frame: False)
        with tracing(trace):
            call()
        seen.update(dict.fromkeys(folder_of(file) for file in trace.touched))
    return list(seen)


def behaviours(hub: Any, base: Path, root: Path) -> dict[str, Any]:
    """Issue 31: the folders three behaviours cross, first public call to last."""
    delay = new_agent(hub, base, "whole-delay")
    delay.publish("soul", {"header": "s", "data": {"count": 7, "events": [1]}}, wait=True)
    request = whole(root, lambda: delay.notification("delay", {"channel": "soul", "seconds": 1}))
    time.sleep(2.2)  # deadlines are whole seconds
    expiry = whole(root, lambda: delay.stamp(delay.notification("check")))
    producer = new_agent(hub, base, "whole-publish")
    spill = new_agent(hub, base, "whole-spill")
    out: dict[str, Any] = {}
    for name, crossed in (
        ("delay_expiry", list(dict.fromkeys(request + expiry))),
        (
            "publish",
            whole(root, lambda: producer.publish_event("mcp.build", {"text": "x"}, wait=True)),
        ),
        (
            "attention_spill",
            whole(
                root,
                lambda: spill.publish(
                    "mcp.big", {"header": "big", "data": {"text": OVER_CAP}}, wait=True
                ),
                lambda: spill.stamp(spill.notification("check")),
            ),
        ),
    ):
        out[name] = {
            "folders": len(crossed),
            "jobs_packages": sum(f.startswith("jobs/") for f in crossed),
            "crossed": sorted(crossed),
        }
    return out


def mcp_update(base: Path, root: Path) -> list[Trace]:
    """Three legs: the producer's publish up to its channel file, the sync tick up to the
    wake signal (C27), the MCP server's watch up to the subscriber's notice."""
    from tidings.mcp.server import AgentServer  # the MCP extra: only this trace needs it

    async def run() -> list[Trace]:
        async with tidings.aio.connect("embedded") as hub:
            (base / "mcp").mkdir()
            agent = await hub.agent(base / "mcp", inline=True)
            server = AgentServer(agent)
            session = Session()
            server.subscribers.add(session)
            watching = asyncio.create_task(server.watch())
            await asyncio.sleep(0.2)  # the watch has read where the stream ends
            publish = Trace(root, writes("mcp.build.json"))
            with tracing(publish):
                # The sync agent's call: the profile hook sees this thread only.
                agent.sync.publish_event("mcp.build", {"text": "tests passed"}, wait=True)
            tick = Trace(root, script("wake_signal"))
            with tracing(tick):
                sync_host()(hub.sync.runtime, hub.sync.settings.host)
            watch = Trace(root, lambda f: f.f_code.co_name == "send_resource_updated")
            with tracing(watch):
                await asyncio.wait_for(session.noticed.wait(), 10)
            watching.cancel()
            return [publish, tick, watch]

    return asyncio.run(run())


def main() -> None:
    root = code_root()
    out: dict[str, Any] = {"benchmark": "traces", "tree": str(root)}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        hub = tidings.connect("embedded")
        try:
            for name, run in (
                ("delay_expiry", delay_expiry),
                ("memory_admission", memory_admission),
                ("attention_spill", attention_spill),
                ("blocked_warning", blocked_warning),
            ):
                trace = run(hub, base, root)
                files = trace.files
                out[name] = {
                    "files": len(files) if files is not None else None,
                    "folders": folders(files) if files is not None else None,
                    "touched": len(trace.touched),
                    "touched_folders": folders(list(trace.touched)),
                    "trace": files,
                }
            out["behaviours"] = behaviours(hub, base, root)
        finally:
            hub.close()
        traces = mcp_update(base, root)
        legs = [leg.files or [] for leg in traces]
        union = list(dict.fromkeys(file for leg in legs for file in leg))
        touched = {file for leg in traces for file in leg.touched}
        out["mcp_update"] = {
            "files": len(union) if all(legs) else None,
            "folders": folders(union) if all(legs) else None,
            "touched": len(touched),
            "touched_folders": folders(sorted(touched)),
            "legs": [len(leg) for leg in legs],
            "trace": legs[0],
            "tick_trace": legs[1],
            "server_trace": legs[2],
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
