"""Nothing escapes a public call or a tick (channels.md C52; issue 11 part b).

Each public entry point is made to fail underneath with an exception no rule
expects; the call must answer ``internal_error`` (or fail open as its rule says)
and log the traceback. Calls that return non-dict values raise ``TidingsError``
with that reason (interfaces.md, Errors in Python).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import tidings
from tests.conftest import make_agent
from tidings import _agent as agent_face
from tidings import _tool as notification_tool
from tidings._agent import Agent
from tidings._hub import Hub
from tidings.jobs import cap, channels, consumer, guard, inbox, memory, tick, turns
from tidings.jobs.consumer import visit
from tidings.jobs.runtime import Runtime
from tidings.store.errors import TidingsError, UnsafePathError
from tidings.store.models import AgentRecord


class Poison(RuntimeError):
    """An internal failure no rule foresees."""


def boom(*args: Any, **kwargs: Any) -> Any:
    raise Poison("poisoned")


@pytest.fixture
def hub(fake_redis: Any) -> Iterator[Hub]:
    with tidings.connect(client=fake_redis) as h:
        yield h


@pytest.fixture
def agent(hub: Hub, tmp_path: Path) -> Agent:
    (tmp_path / "w").mkdir()
    return hub.agent(tmp_path / "w", inline=True)


#: (public call, where the public face looks up the function it runs, that function's name):
#: the front door for a call that imports it when it runs, else the module that bound it.
ANSWERING: list[tuple[str, Callable[[Agent], Any], Any, str]] = [
    ("publish", lambda a: a.publish("soul", {"header": "h"}), agent_face, "publish"),
    (
        "publish_event",
        lambda a: a.publish_event("system", {"body": "b"}),
        agent_face,
        "publish_event",
    ),
    (
        "publish_daemon_event",
        lambda a: a.publish_daemon_event("r1", {"n": 1}),
        channels,
        "publish_daemon_event",
    ),
    ("render", lambda a: a.render(), consumer, "render"),
    ("cap_persistent", lambda a: a.cap_persistent({"email": {}}), cap, "cap_persistent"),
    (
        "notification",
        lambda a: a.notification("delay", {"channel": "soul", "seconds": 5}),
        notification_tool,
        "request_delay",
    ),
    (
        "call_tool",
        lambda a: a.call_tool({"action": "delay", "input": {"channel": "soul", "seconds": 5}}),
        notification_tool,
        "request_delay",
    ),
    ("startup", lambda a: a.startup(), turns, "startup"),
    ("prepare_turn", lambda a: a.prepare_turn(), turns, "prepare_turn"),
    ("mark_side_effect", lambda a: a.mark_side_effect("t1"), turns, "mark_side_effect"),
    ("finish_turn", lambda a: a.finish_turn("t1"), turns, "finish_turn"),
    ("ignore", lambda a: a.ignore("evt_1"), inbox, "ignore"),
    ("admit", lambda a: a.admit("app", "hello"), inbox, "admit"),
    ("observe_memory", lambda a: a.observe_memory(), memory, "observe_memory"),
]

RAISING: list[tuple[str, Callable[[Agent], Any], Any, str]] = [
    ("snapshot", lambda a: a.snapshot(), consumer, "observe"),
    ("inbox", lambda a: a.inbox(), inbox, "projection"),
    ("wait_for_wake", lambda a: a.wait_for_wake(0), consumer, "wait_for_wake"),
]


def _traceback_logged(caplog: pytest.LogCaptureFixture, call: str) -> bool:
    return any(
        getattr(r, "event", None) == guard.FAILED_EVENT
        and r.exc_info
        and r.fields.get("call") == call
        for r in caplog.records
    )  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("call", "invoke", "module", "name"), ANSWERING, ids=[row[0] for row in ANSWERING]
)
def test_dict_calls_answer_internal_error(
    agent: Agent,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    call: str,
    invoke: Callable[[Agent], Any],
    module: Any,
    name: str,
) -> None:
    monkeypatch.setattr(module, name, boom)
    with caplog.at_level(logging.ERROR, logger="tidings"):
        result = invoke(agent)
    assert result["status"] == "error" and result["reason"] == "internal_error"
    assert "Poison" in result["message"]
    assert _traceback_logged(caplog, call)


@pytest.mark.parametrize(
    ("call", "invoke", "module", "name"), RAISING, ids=[row[0] for row in RAISING]
)
def test_value_calls_raise_tidings_error(
    agent: Agent,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    call: str,
    invoke: Callable[[Agent], Any],
    module: Any,
    name: str,
) -> None:
    monkeypatch.setattr(module, name, boom)
    with caplog.at_level(logging.ERROR, logger="tidings"), pytest.raises(TidingsError) as raised:
        invoke(agent)
    assert raised.value.reason == "internal_error"
    assert _traceback_logged(caplog, call)


def test_hub_agents_raises_tidings_error(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub.registry, "all", boom)
    with pytest.raises(TidingsError) as raised:
        hub.agents()
    assert raised.value.reason == "internal_error"


def test_stamp_fails_open_to_the_unchanged_result(
    agent: Agent, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """C24: a stamp that cannot be made returns the tool's result as it was."""
    monkeypatch.setattr(consumer, "stamp", boom)
    result = {"status": "ok", "x": 1}
    with caplog.at_level(logging.ERROR, logger="tidings"):
        assert agent.stamp(result) == result
    assert _traceback_logged(caplog, "stamp")


def test_a_tidings_error_underneath_answers_its_own_reason(
    agent: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsafe(*args: Any, **kwargs: Any) -> Any:
        raise UnsafePathError(".notification/.locks is a symlink")

    monkeypatch.setattr(agent_face, "publish_event", unsafe)
    result = agent.publish_event("system", {"body": "b"})
    assert result == {
        "status": "error",
        "reason": "unsafe_path",
        "message": ".notification/.locks is a symlink",
    }


def _deep(n: int) -> dict[str, Any]:
    event: dict[str, Any] = {}
    for _ in range(n):
        event = {"x": event}
    return event


@pytest.mark.parametrize("call", ["publish_event", "publish", "admit", "stamp", "tool"])
def test_deep_python_input_never_raises(agent: Agent, call: str) -> None:
    """Issue 11 item 6: a value nested 3,000 deep answers, whatever its reason."""
    deep = _deep(3000)
    if call == "publish_event":
        result = agent.publish_event("system", deep)
    elif call == "publish":
        result = agent.publish("soul", {"header": "h", "data": deep})
    elif call == "admit":
        result = agent.admit("app", "s", payload=deep)
    elif call == "stamp":
        result = agent.stamp({"status": "ok", "deep": deep})
    else:
        result = agent.call_tool(
            {
                "action": "add",
                "input": {
                    "name": "h",
                    "channel": "c",
                    "source": "s",
                    "description": "d",
                    "how_to_modify": deep,
                },
            }
        )
    assert isinstance(result, dict)


class TestTickIsolation:
    """C52: one poisoned agent never stops the others' wakes."""

    def test_poisoned_agent_is_logged_and_skipped(
        self,
        rt: Runtime,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        good = make_agent(rt, tmp_path / "good", "good")
        make_agent(rt, tmp_path / "bad", "bad")
        (good.root / ".notification").mkdir()
        (good.root / ".notification" / "email.json").write_text('{"header": "mail"}')
        real = visit.bare_read

        def poisoned(rt_: Runtime, a: AgentRecord, *args: Any) -> Any:
            if a.agent_id == "bad":
                raise RecursionError("maximum recursion depth exceeded")
            return real(rt_, a, *args)

        monkeypatch.setattr(visit, "bare_read", poisoned)
        (tmp_path / "bad" / ".notification").mkdir()
        (tmp_path / "bad" / ".notification" / "email.json").write_text("{}")
        with caplog.at_level(logging.ERROR, logger="tidings"):
            result = tick.sync_host(rt, rt.settings.host)
        assert result["failed"] == ["bad"] and result["woke"] == 1
        failed = [r for r in caplog.records if getattr(r, "event", None) == guard.FAILED_EVENT]
        assert failed and failed[0].fields["agent_id"] == "bad"  # type: ignore[attr-defined]
        assert failed[0].exc_info is not None

    def test_deep_file_never_stops_the_tick(self, rt: Runtime, tmp_path: Path) -> None:
        """Issue 11 item 1: a 5,000-deep channel file in one workdir; the others still wake."""
        hostile = make_agent(rt, tmp_path / "hostile", "hostile")
        good = make_agent(rt, tmp_path / "good", "good")
        for record in (hostile, good):
            (record.root / ".notification").mkdir()
        (hostile.root / ".notification" / "mcp.x.json").write_text("[" * 5000 + "]" * 5000)
        (good.root / ".notification" / "email.json").write_text(json.dumps({"header": "m"}))
        result = tick.sync_host(rt, rt.settings.host)
        assert result["status"] == "ok" and result["agents"] == 2 and result["woke"] >= 1
