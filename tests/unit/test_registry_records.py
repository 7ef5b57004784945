"""One bad agent record is one skipped record (issue 24, acceptance 11): ``hub.status()``,
the agent listings and the console's agents page answer, list the other agents, and log
one line for the record that does not parse."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

import tidings
from tidings.inspection.agents import agents_page
from tidings.store import keys
from tidings.store.registry import AgentRegistry

#: Records that do not parse: a field missing, not JSON, a rule broken.
MALFORMED = ['{"agent_id":"a1"}', "not json", '{"agent_id":"a1","workdir":"rel","host":"h"}']


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[tidings.Hub]:
    with tidings.connect("embedded", background=False) as opened:
        for name in ("b2", "c3"):
            (tmp_path / name).mkdir()
            opened.agent(tmp_path / name, agent_id=name)
        yield opened


def plant(hub: tidings.Hub, raw: str) -> None:
    """Store ``raw`` as agent a1's record, listed in this host's index (issue 25 layout)."""
    hub.redis.set(keys.agent_record("a1"), raw)
    hub.redis.hset(keys.host_agents(hub.settings.host), "a1", "/w/a1")


def unreadable_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == "agent_record_unreadable"]


@pytest.mark.parametrize("raw", MALFORMED)
def test_status_skips_a_malformed_record_and_logs_one_line(
    hub: tidings.Hub,
    raw: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    plant(hub, raw)
    with caplog.at_level(logging.WARNING, logger="tidings"):
        figures = hub.status()
    assert figures["status"] == "ok"
    assert [a["agent_id"] for a in figures["agents"]] == ["b2", "c3"]
    lines = unreadable_lines(caplog)
    assert len(lines) == 1
    assert lines[0].fields["agent_id"] == "a1"  # type: ignore[attr-defined]


def test_listings_skip_it_too(hub: tidings.Hub, caplog: pytest.LogCaptureFixture) -> None:
    plant(hub, MALFORMED[0])
    with caplog.at_level(logging.WARNING, logger="tidings"):
        assert [a["agent_id"] for a in hub.agents()] == ["b2", "c3"]
        page = agents_page(hub.redis, hub.clock.now())
        assert [a["agent_id"] for a in page["agents"]] == ["b2", "c3"]
        assert AgentRegistry(hub.redis).get("a1") is None
        assert [r is None for r in AgentRegistry(hub.redis).get_many(["a1", "b2"])] == [True, False]
    assert len(unreadable_lines(caplog)) == 4


def test_a_malformed_record_is_replaced_by_registering_again(
    hub: tidings.Hub,
    tmp_path: Path,
) -> None:
    plant(hub, MALFORMED[0])
    (tmp_path / "a1").mkdir()
    hub.agent(tmp_path / "a1", agent_id="a1")
    assert [a["agent_id"] for a in hub.agents()] == ["a1", "b2", "c3"]
