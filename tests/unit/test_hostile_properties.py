"""Generated hostile content at every reader and every public call (issue 11 acceptance 5;
channels.md C46-C52).

Invariant: every call answers a result (or fails open as its rule says): never an
exception, never the C52 last-resort ``internal_error`` (which would mean something
unexpected raised underneath), every result writable as UTF-8 JSON, and nothing
written outside the workdir.

``make test`` runs a short profile (~25 s); ``TIDINGS_HYPOTHESIS_PROFILE=long`` runs
many more examples.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import fakeredis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidings
from tidings._agent import Agent
from tidings.jobs.consumer import observe, sync_agent

#: Examples per property: the short profile keeps ``make test`` lean.
PROFILES = {"short": 12, "long": 400}
EXAMPLES = PROFILES.get(os.environ.get("TIDINGS_HYPOTHESIS_PROFILE", "short"), PROFILES["short"])
HOSTILE = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=EXAMPLES <= 12,
    suppress_health_check=list(HealthCheck),
)

# -- hostile content ---------------------------------------------------------------


def _deep(depth: int, opener: str) -> str:
    if opener == "{":
        return '{"k":' * depth + "1" + "}" * depth
    return "[" * depth + "1" + "]" * depth


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.sampled_from(["\ud83d", "a\udc00b", "😀", "\x00", "", "x" * 3000]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
deep_text = st.builds(_deep, st.integers(60, 5000), st.sampled_from(["[", "{"]))
envelope_like = st.builds(
    lambda header, events, extra: {"header": header, "data": {"events": events}, **extra},
    scalars,
    st.one_of(st.lists(json_values, max_size=5), json_values),
    st.dictionaries(st.text(max_size=8), json_values, max_size=3),
)


def _to_bytes(value: Any) -> bytes:
    # ensure_ascii writes a lone surrogate as the escape a JavaScript producer emits.
    return json.dumps(value, ensure_ascii=True).encode()


file_bytes = st.one_of(
    st.binary(max_size=300),
    deep_text.map(str.encode),
    json_values.map(_to_bytes),
    envelope_like.map(_to_bytes),
    envelope_like.map(_to_bytes).map(lambda b: b[: len(b) // 2]),
    st.sampled_from(
        [
            b"NaN",
            b'{"data": Infinity}',
            b"",
            b"\xef\xbb\xbf{}",
            b"[]" * 10,
            b'"' + b"x" * 1_048_577 + b'"',
        ]
    ),
)
#: Special files: what else can sit where a file is expected.
SPECIALS = ("fifo", "directory", "symlink_out", "symlink_dangling", "socket")
contents = st.one_of(file_bytes, st.sampled_from(SPECIALS))

#: Where hostile content is planted: every file a reader reads.
TARGETS = (
    ".notification/email.json",
    ".notification/system.json",
    ".notification/mcp.x.json",
    ".notification/soul.json",
    ".notification/deploys.json",
    ".notification/hooks.json",
    ".notification/.delay_state.json",
    ".notification/daemon/r1.json",
    ".notification/daemon/.tombstone",
    ".notification/daemon.json",
    "notification.json",
    "settings/system.json",
    ".notification/" + "z" * 230 + ".json",
    ".notification/rogue.json",
    ".notification/.locks",
)
plantings = st.dictionaries(st.sampled_from(TARGETS), contents, min_size=1, max_size=5)


class World:
    """A workdir next to an ``outside`` directory that must never change."""

    def __init__(self, base: Path) -> None:
        self.root = base / "workdir"
        self.outside = base / "outside"
        self.root.mkdir()
        self.outside.mkdir()
        (self.outside / "secret.json").write_text('{"header": "secret"}')
        self._sockets: list[socket.socket] = []

    def plant(self, rel: str, content: bytes | str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.is_symlink() or path.exists():
            path.unlink()
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif content == "fifo":
            os.mkfifo(path)
        elif content == "directory":
            path.mkdir(exist_ok=True)
        elif content == "symlink_out":
            path.symlink_to(self.outside / "secret.json")
        elif content == "symlink_dangling":
            path.symlink_to(self.outside / "missing.json")
        elif content == "socket":
            sock = socket.socket(socket.AF_UNIX)
            try:
                sock.bind(str(path))
                self._sockets.append(sock)
            except OSError:  # the path is too long for a socket: a FIFO instead
                sock.close()
                os.mkfifo(path)

    def outside_state(self) -> list[tuple[str, bytes]]:
        return sorted((p.name, p.read_bytes()) for p in self.outside.iterdir())

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()


@contextmanager
def world() -> Iterator[tuple[World, Agent]]:
    with tempfile.TemporaryDirectory() as base:
        w = World(Path(base))
        client = fakeredis.FakeRedis(server=fakeredis.FakeServer(), version=(7,))
        try:
            with tidings.connect(client=client) as hub:
                agent = hub.agent(w.root, inline=True)
                agent.notification(
                    "add",
                    {
                        "name": "h",
                        "channel": "deploys",
                        "source": "s",
                        "description": "d",
                        "how_to_modify": "m",
                        "how_to_cancel": "c",
                    },
                )
                before = w.outside_state()
                yield w, agent
                assert w.outside_state() == before, "something was written outside the workdir"
        finally:
            w.close()
            client.close()


def answered(result: Any, *, echoes_caller: bool = False) -> Any:
    """The invariant on one result. ``stamp`` and ``cap_persistent`` hand the caller's
    own values back (B6), so only they may hold what JSON cannot write."""
    if isinstance(result, dict):
        assert result.get("reason") != "internal_error", result
        if not echoes_caller:
            json.dumps(result, ensure_ascii=False, allow_nan=False).encode("utf-8")
    return result


#: Every reader and public call, over whatever the workdir holds.
READERS: list[tuple[str, Callable[[Agent], Any]]] = [
    ("snapshot", lambda a: a.snapshot()),
    ("render", lambda a: a.render()),
    ("stamp", lambda a: a.stamp({"ok": 1})),
    ("tick", lambda a: sync_agent(a.runtime, a.record)),
    ("observe", lambda a: observe(a.runtime, a.record).payloads),
    ("publish_event", lambda a: a.publish_event("email", {"n": 1})),
    ("publish_event_system", lambda a: a.publish_event("system", {"n": 2}, priority="high")),
    ("publish_mcp", lambda a: a.publish("mcp.x", {"header": "h", "data": {}})),
    ("publish_hook", lambda a: a.publish_event("deploys", {"n": 3})),
    ("daemon", lambda a: a.publish_daemon_event("r1", {"n": 4})),
    ("list", lambda a: a.notification("list")),
    (
        "add",
        lambda a: a.notification(
            "add",
            {
                "name": "g",
                "channel": "rogue",
                "source": "s",
                "description": "d",
                "how_to_modify": "m",
                "how_to_cancel": "c",
            },
        ),
    ),
    ("edit", lambda a: a.notification("edit", {"name": "h", "description": "e"})),
    ("delay", lambda a: a.notification("delay", {"channel": "email", "seconds": 30})),
    ("cancel", lambda a: a.notification("delay", {"channel": "email", "seconds": 0})),
    ("dismiss_event", lambda a: a.notification("dismiss_event", {"event_id": "e1", "force": True})),
    (
        "dismiss_ref",
        lambda a: a.notification(
            "dismiss_ref", {"ref_id": "r", "channel": "daemon", "force": True}
        ),
    ),
    ("dismiss_channel", lambda a: a.notification("dismiss_channel", {"channel": "mcp.x"})),
    ("settings", lambda a: a.notification("settings")),
    ("drop", lambda a: a.notification("drop", {"name": "h"})),
    ("render_again", lambda a: a.render()),
    ("tick_again", lambda a: sync_agent(a.runtime, a.record)),
    ("wait_for_wake", lambda a: a.wait_for_wake(0)),
]


def run_everything(agent: Agent) -> None:
    for name, call in READERS:
        try:
            answered(call(agent))
        except AssertionError:
            raise
        except Exception as exc:  # report which call, with what
            raise AssertionError(f"{name} raised {type(exc).__name__}: {exc}") from exc


@HOSTILE
@given(plantings)
def test_every_reader_over_hostile_files(planted: dict[str, bytes | str]) -> None:
    with world() as (w, agent):
        for rel, content in planted.items():
            w.plant(rel, content)
        run_everything(agent)


@HOSTILE
@given(st.lists(file_bytes, min_size=1, max_size=3))
def test_symlinks_swapped_in_mid_read(bodies: list[bytes]) -> None:
    """A writer flips channel files between content and links out while everything runs."""
    with world() as (w, agent):
        stop = threading.Event()

        def flip() -> None:
            n = 0
            while not stop.is_set():
                rel = (
                    ".notification/email.json",
                    ".notification/daemon/r1.json",
                    ".notification/hooks.json",
                )[n % 3]
                with suppress(OSError):
                    w.plant(rel, bodies[n % len(bodies)] if n % 2 else "symlink_out")
                n += 1

        flipper = threading.Thread(target=flip, daemon=True)
        flipper.start()
        try:
            run_everything(agent)
        finally:
            stop.set()
            flipper.join(5)


names = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "mcp.",
            "mcp.x\n",
            "daemon",
            "delay-alarm",
            "..",
            "mcp." + "a" * 300,
            "mcp.\ud83d",
            "system",
        ]
    ),
    st.integers(),
    st.none(),
)
call_values = st.one_of(
    json_values,
    st.builds(lambda d: {"deep": _nest(d)}, st.integers(55, 3000)),
    st.sampled_from(
        [
            {"a": {1, 2}},
            {"b": b"bytes"},
            {1: "int key"},
            {"event_id": None},
            {"event_id": "x" * 201},
            {"big": "x" * 300_000},
        ]
    ),
)


def _nest(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"k": value}
    return value


@HOSTILE
@given(
    names,
    call_values,
    st.one_of(st.none(), st.text(max_size=5)),
    names,
    st.dictionaries(
        st.one_of(st.text(max_size=10), st.sampled_from(["action", "input", "summarize"])),
        call_values,
        max_size=4,
    ),
)
def test_every_public_call_with_hostile_arguments(
    channel: Any, value: Any, priority: Any, key: Any, arguments: dict[Any, Any]
) -> None:
    with world() as (_, agent):
        calls: list[tuple[str, Callable[[], Any]]] = [
            ("publish", lambda: agent.publish(channel, value)),
            (
                "publish_event",
                lambda: agent.publish_event(channel, value, priority=priority, idempotency_key=key),
            ),
            ("daemon", lambda: agent.publish_daemon_event(channel, value, priority=priority)),
            ("admit", lambda: agent.admit(channel, key, value, key=key)),
            ("call_tool", lambda: agent.call_tool(arguments)),
            ("call_tool_action", lambda: agent.call_tool({"action": channel, "input": value})),
            (
                "add",
                lambda: agent.notification(
                    "add", value if isinstance(value, dict) else {"name": channel}
                ),
            ),
            ("delay", lambda: agent.notification("delay", {"channel": channel, "seconds": value})),
            ("dismiss", lambda: agent.notification("dismiss_event", {"event_id": channel})),
            (
                "stamp",
                lambda: agent.stamp(
                    value if isinstance(value, dict) else {"v": value},
                    persistent=value if isinstance(value, dict) else None,
                ),
            ),
            ("cap_persistent", lambda: agent.cap_persistent(value)),
            ("tick", lambda: sync_agent(agent.runtime, agent.record)),
        ]
        for name, call in calls:
            try:
                answered(call(), echoes_caller=name in ("stamp", "cap_persistent"))
            except AssertionError:
                raise
            except tidings.TidingsError:
                pass  # the raising calls interfaces.md lists answer with a typed reason
            except Exception as exc:
                raise AssertionError(f"{name} raised {type(exc).__name__}: {exc}") from exc
