"""Helpers for delay tests: state and alarm files, channel files, log capture."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from tidings.store.files import atomic_write
from tidings.store.jsonfmt import compact, compact_sorted, utc_stamp
from tidings.store.models import AgentRecord

STATE = ".notification/.delay_state.json"
ALARM = ".notification/delay-alarm.json"
REQUEST_ID = "0123456789abcdef0123456789abcdef"


def read_json(agent: AgentRecord, rel: str) -> Any:
    path = agent.root / rel
    return json.loads(path.read_bytes()) if path.exists() else None


def state_of(agent: AgentRecord) -> Any:
    return read_json(agent, STATE)


def alarm_of(agent: AgentRecord) -> Any:
    return read_json(agent, ALARM)


def alarm_bytes_of(agent: AgentRecord) -> bytes | None:
    path = agent.root / ALARM
    return path.read_bytes() if path.exists() else None


def put_state(agent: AgentRecord, state: Any) -> None:
    data = state if isinstance(state, bytes) else compact_sorted(state).encode()
    atomic_write(agent.root, STATE, data)


def write_channel(agent: AgentRecord, channel: str, envelope: dict[str, Any]) -> bytes:
    """Write a channel file directly, as an outside producer may."""
    data = compact(envelope).encode()
    atomic_write(agent.root, f".notification/{channel}.json", data)
    return data


def active_state(
    now: float,
    target: str = "email",
    seconds: int = 60,
    started: float | None = None,
    **changes: Any,
) -> dict[str, Any]:
    """A valid active state started at ``started`` (default: ``now``)."""
    start = now if started is None else started
    state: dict[str, Any] = {
        "version": 1,
        "status": "active",
        "request_id": REQUEST_ID,
        "target": target,
        "requested_seconds": seconds,
        "max_seconds": 600,
        "started_epoch": start,
        "started_at": utc_stamp(start),
        "deadline_epoch": start + seconds,
        "deadline_at": utc_stamp(start + seconds),
        "initial": {"present": False},
    }
    state.update(changes)
    return state


def events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    """Fields of every ``tidings.jobs.log.event(name, ...)`` captured so far."""
    return [
        dict(getattr(r, "fields", {})) for r in caplog.records if getattr(r, "event", None) == name
    ]


def capture(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="tidings")


class SentMessages:
    """A broker that records what the alarm body enqueues."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def declare_queue(self, name: str) -> None:
        pass

    def enqueue(self, message: Any) -> Any:
        self.sent.append(message)
        return message

    def expires(self) -> list[tuple[str, str, tuple[Any, ...]]]:
        return [(m.queue_name, m.actor_name, m.args) for m in self.sent]
