"""Structured logs of the long-running commands (tidings/_logging.py), issue 7."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from dramatiq import Message
from dramatiq.middleware import CurrentMessage

from tidings import _logging
from tidings.jobs import log
from tidings.store.settings import Settings


@pytest.fixture
def captured() -> Iterator[tuple[io.StringIO, logging.Handler]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    log.logger.addHandler(handler)
    yield stream, handler
    log.logger.removeHandler(handler)


def test_json_line_carries_event_fields_and_message_context(
    captured: tuple[io.StringIO, logging.Handler],
) -> None:
    stream, handler = captured
    handler.setFormatter(_logging.JsonFormatter("h1"))
    message = Message(
        queue_name="tidings.host.h1",
        actor_name="flush_channel",
        args=("a1", "mcp.x"),
        kwargs={},
        options={},
    )
    CurrentMessage().before_process_message(None, message)
    try:
        log.event("flush_unsafe", channel="mcp.x")
    finally:
        CurrentMessage().after_process_message(None, message)
    entry = json.loads(stream.getvalue())
    assert entry["event"] == "flush_unsafe" and entry["fields"] == {"channel": "mcp.x"}
    assert entry["actor"] == "flush_channel" and entry["agent_id"] == "a1"
    assert entry["message_id"] == message.message_id
    assert entry["level"] == "warning" and entry["logger"] == "tidings" and entry["host"] == "h1"
    assert {"time", "message", "pid"} <= set(entry)


def test_outside_a_message_the_agent_comes_from_the_fields(
    captured: tuple[io.StringIO, logging.Handler],
) -> None:
    stream, handler = captured
    handler.setFormatter(_logging.JsonFormatter("h1"))
    log.event("actor_unknown_agent", actor="x", agent_id="a2")
    entry = json.loads(stream.getvalue())
    assert entry["agent_id"] == "a2" and "message_id" not in entry


def test_text_lines_when_json_is_off(captured: tuple[io.StringIO, logging.Handler]) -> None:
    stream, handler = captured
    handler.setFormatter(_logging.TextFormatter())
    log.event("something", agent_id="a3")
    line = stream.getvalue().strip()
    assert "WARNING tidings something" in line and line.endswith("event=something agent_id=a3")


def test_configure_installs_one_stderr_handler_however_often_called() -> None:
    root = logging.getLogger()
    level = root.level
    try:
        _logging.configure(Settings(host="h", log_json=True))
        _logging.configure(Settings(host="h", log_json=False))
        ours = [h for h in root.handlers if isinstance(h, _logging._ProcessHandler)]
        assert len(ours) == 1 and isinstance(ours[0].formatter, _logging.TextFormatter)
    finally:
        for handler in [h for h in root.handlers if isinstance(h, _logging._ProcessHandler)]:
            root.removeHandler(handler)
        root.setLevel(level)


def test_log_level_setting_and_routine_apscheduler_lines_at_debug() -> None:
    """interfaces.md TIDINGS_LOG_LEVEL: routine per-tick scheduling lines are DEBUG."""
    assert Settings(log_level="debug").log_level == "DEBUG"
    with pytest.raises(ValueError):
        Settings(log_level="LOUD")
    tick = logging.LogRecord(
        "apscheduler.executors.default",
        logging.INFO,
        __file__,
        1,
        "Running job %s",
        ("sync",),
        None,
    )
    own = logging.LogRecord("tidings", logging.INFO, __file__, 1, "x", (), None)
    assert not _logging.RoutineToDebug(logging.INFO).filter(tick)
    assert tick.levelname == "DEBUG"
    assert _logging.RoutineToDebug(logging.INFO).filter(own)
    assert _logging.RoutineToDebug(logging.DEBUG).filter(tick)
    assert not _logging.RoutineToDebug(logging.WARNING).filter(own)


def test_event_fields_are_values_not_a_dict_repr(
    captured: tuple[io.StringIO, logging.Handler],
) -> None:
    stream, handler = captured
    handler.setFormatter(_logging.JsonFormatter("h1"))
    log.event("flush_unsafe", channel="mcp.x", count=3)
    entry = json.loads(stream.getvalue())
    assert entry["message"] == "flush_unsafe"
    assert entry["fields"] == {"channel": "mcp.x", "count": 3}
