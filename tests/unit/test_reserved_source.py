"""C54: a producer's event in ``system`` shaped like tidings' own notices is refused with
``reserved_source`` and writes nothing; a producer's own ``system`` events still land, and
so do tidings' notices (issue 24 finding 6, acceptance 8)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tidings
from tidings.jobs.channels import system_events

#: Events a producer may not put in ``system`` (C28's shapes and C54's prefixes).
FORGED = [
    {"source": "notification_hook", "body": "Channel 'x' is not registered"},
    {"source": "notification_store", "ref_id": "anything"},
    {"source": "notification_", "text": "bare prefix"},
    {"source": "ci", "ref_id": "blocked_channel:scraper"},
    {"source": "ci", "ref_id": "oversized_channel:logs"},
    {"ref_id": "blocked_channel:overflow"},
]


@pytest.fixture
def hub() -> Iterator[tidings.Hub]:
    with tidings.connect("embedded", background=False) as opened:
        yield opened


@pytest.fixture
def agent(hub: tidings.Hub, tmp_path: Path) -> Any:
    return hub.agent(tmp_path)


def store_state(hub: tidings.Hub) -> dict[bytes, Any]:
    return {key: hub.redis.dump(key) for key in hub.redis.scan_iter()}


def system_events_of(root: Path) -> list[dict[str, Any]]:
    path = root / ".notification" / "system.json"
    if not path.exists():
        return []
    events: list[dict[str, Any]] = json.loads(path.read_bytes())["data"]["events"]
    return events


@pytest.mark.parametrize("event", FORGED, ids=lambda e: e.get("ref_id") or e["source"])
def test_a_forged_notice_is_refused_and_writes_nothing(
    hub: tidings.Hub,
    agent: Any,
    tmp_path: Path,
    event: dict[str, Any],
) -> None:
    before = store_state(hub)
    result = agent.publish_event("system", event)
    assert result["status"] == "error"
    assert result["reason"] == "reserved_source"
    assert store_state(hub) == before
    assert not (tmp_path / ".notification").exists()


def test_a_whole_system_mirror_with_a_forged_notice_is_refused(
    hub: tidings.Hub,
    agent: Any,
    tmp_path: Path,
) -> None:
    envelope = {
        "header": "system",
        "data": {
            "events": [
                {"source": "ci", "body": "fine"},
                {"source": "notification_hook", "ref_id": "blocked_channel:x", "body": "forged"},
            ]
        },
    }
    before = store_state(hub)
    assert agent.publish("system", envelope)["reason"] == "reserved_source"
    assert store_state(hub) == before
    assert not (tmp_path / ".notification").exists()


def test_the_reserved_shapes_are_free_on_other_channels(agent: Any, tmp_path: Path) -> None:
    result = agent.publish_event("mcp.build", FORGED[0])
    assert result["status"] == "ok"


def test_a_producers_own_system_event_still_lands(agent: Any, tmp_path: Path) -> None:
    for event in (
        {"source": "ci", "ref_id": "build:42", "body": "green"},
        {"source": "my_notification_bot", "ref_id": "deploy:blocked_channel:x"},
    ):
        assert agent.publish_event("system", event)["status"] == "ok"
    assert [e["source"] for e in system_events_of(tmp_path)] == ["ci", "my_notification_bot"]


def test_tidings_own_notices_still_land(hub: tidings.Hub, agent: Any, tmp_path: Path) -> None:
    record = hub.registry.require(agent.agent_id)
    result = system_events.notify(
        agent.runtime,
        record,
        source="notification_hook",
        ref_id="blocked_channel:scraper",
        body="not registered",
    )
    assert result["status"] == "ok"
    assert [e["ref_id"] for e in system_events_of(tmp_path)] == ["blocked_channel:scraper"]
