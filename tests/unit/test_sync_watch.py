"""The sync tick over a filesystem watcher (channels.md C27, delay.md D9; issue 15
acceptance 2 and 3 at the job level): a tick visits the agents whose directory saw an
event, those with a due delay and those without watches; every agent at least every
``full_scan_seconds`` and at once after an overflow or a watcher failure."""

from __future__ import annotations

import errno
import json
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis
from inotify_simple import INotify

from tests.conftest import TEST_HOST, make_agent
from tests.support.delay import active_state, capture, events, put_state, state_of
from tests.support.polling import wait_until
from tidings.jobs import metrics, tick
from tidings.jobs.consumer import wake_stream
from tidings.jobs.runtime import Runtime
from tidings.jobs.tick import host as host_tick
from tidings.scheduler.sync_tick import SyncTicker, run_tick
from tidings.scheduler.watcher import Watcher
from tidings.store import keys
from tidings.store.clock import FakeClock
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry

FULL_SCAN = 30.0


def write_direct(root: Path, name: str, payload: Any) -> None:
    d = root / ".notification"
    d.mkdir(parents=True, exist_ok=True)
    temp = d / f".{name}.tmp"
    temp.write_text(json.dumps(payload))
    os.replace(temp, d / name)


class Harness:
    """A ticker whose messages run ``sync_host`` inline; records what each tick visited."""

    def __init__(self, rt: Runtime, clock: FakeClock, watcher: Watcher | None) -> None:
        self.rt, self.clock, self.watcher = rt, clock, watcher
        self.visits: list[list[str] | None] = []
        self.ticker = SyncTicker(
            rt.redis, TEST_HOST, 1.0, FULL_SCAN, self._run, watcher, clock.now, clock.monotonic
        )

    def _run(self, agent_ids: Sequence[str] | None) -> None:
        self.visits.append(None if agent_ids is None else list(agent_ids))
        tick.sync_host(self.rt, TEST_HOST, agent_ids)

    def tick(self) -> dict[str, Any]:
        self.clock.advance(1.0)
        return self.ticker.tick()

    def tick_until_visited(self, agent_id: str) -> dict[str, Any]:
        """Tick until a changed tick names ``agent_id`` (events arrive asynchronously)."""
        return wait_until(
            lambda: (r := self.tick())["changed"] and agent_id in r["changed"] and r,
            timeout=5,
            what=f"a tick visiting {agent_id}",
        )


@pytest.fixture
def frt(fake_redis: Any, clock: FakeClock, settings: Any, jobs_dispatch: Any) -> Runtime:
    runtime = Runtime(fake_redis, clock, settings, jobs_dispatch)
    jobs_dispatch.runtime = runtime
    return runtime


@pytest.fixture
def watcher() -> Iterator[Watcher]:
    w = Watcher()
    yield w
    w.close()


def agents(rt: Runtime, tmp_path: Path, n: int) -> list[AgentRecord]:
    for i in range(n):
        (tmp_path / f"w{i}" / ".notification").mkdir(parents=True)
    return [make_agent(rt, tmp_path / f"w{i}", f"a{i}") for i in range(n)]


def woke(rt: Runtime, agent: AgentRecord) -> bool:
    found = False
    while wake_stream.try_consume(rt, agent) is not None:
        found = True
    return found


def started(
    frt: Runtime, clock: FakeClock, watcher: Watcher | None, tmp_path: Path, n: int = 3
) -> tuple[Harness, list[AgentRecord]]:
    """``n`` agents, the first (full) scan done and every wake drained."""
    records = agents(frt, tmp_path, n)
    h = Harness(frt, clock, watcher)
    assert h.tick()["full"] == ("interval" if watcher else "no_watcher")
    for record in records:
        woke(frt, record)
    h.visits.clear()
    return h, records


def test_c27_a_tick_visits_only_the_agents_that_changed(
    frt: Runtime, clock: FakeClock, watcher: Watcher, tmp_path: Path
) -> None:
    h, (a0, a1, _) = started(frt, clock, watcher, tmp_path)
    write_direct(a1.root, "mcp.x.json", {"header": "news"})
    result = h.tick_until_visited("a1")
    assert result["full"] == "" and "a0" not in result["changed"]
    assert woke(frt, a1) and not woke(frt, a0)
    wait_until(lambda: h.tick()["changed"] == [], timeout=5, what="the write's last event")
    h.visits.clear()
    for _ in range(5):  # a quiet host sends nothing at all
        assert h.tick() == {"full": "", "changed": []}
    assert h.visits == []


def test_c27_full_scan_every_full_scan_seconds(
    frt: Runtime, clock: FakeClock, watcher: Watcher, tmp_path: Path
) -> None:
    h, _ = started(frt, clock, watcher, tmp_path)
    fulls = [h.tick()["full"] for _ in range(int(FULL_SCAN) * 2)]
    assert fulls.count("interval") == 2


def test_acceptance2_a_write_the_watcher_missed_is_found_by_the_backstop(
    frt: Runtime, clock: FakeClock, watcher: Watcher, tmp_path: Path
) -> None:
    """Issue 15 acceptance 2: the event of a write is lost; the full scan still wakes."""
    h, (a0, a1, _) = started(frt, clock, watcher, tmp_path)
    write_direct(a1.root, "mcp.lost.json", {"header": "unseen"})
    write_direct(a0.root, "mcp.marker.json", {"header": "seen after"})
    wait_until(lambda: "a0" in watcher.take().changed, timeout=5, what="the marker event")
    # a1's event came first and went with that take(): the watcher missed this write
    results = [h.tick() for _ in range(int(FULL_SCAN) - 2)]
    assert all(r["full"] == "" for r in results) and not woke(frt, a1)
    results = [h.tick() for _ in range(3)]
    assert [r["full"] for r in results].count("interval") == 1
    assert woke(frt, a1)


def test_acceptance3_overflow_scans_everything_at_once_and_warns(
    frt: Runtime,
    clock: FakeClock,
    watcher: Watcher,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 15 acceptance 3: a real IN_Q_OVERFLOW (the reader held up while more events
    than ``max_queued_events`` arrive) → a full scan at the next tick, a warning, and
    the change written meanwhile wakes its agent."""
    h, (a0, a1, _) = started(frt, clock, watcher, tmp_path)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    caplog.set_level(logging.WARNING, logger="tidings")
    touched = [a0.root / ".notification" / f"n{n}.txt" for n in range(50)]
    for path in touched:
        path.write_bytes(b"")
    with watcher._lock:  # the reader thread waits: the kernel queue fills up
        # one IN_ATTRIB each (names vary: nothing merges); twice the queue, since the
        # reader may have taken a first batch before it stopped at the lock
        for n in range(2 * limit):
            os.utime(touched[n % 50])
        write_direct(a1.root, "mcp.during.json", {"header": "written during the overflow"})
    result = wait_until(
        lambda: (r := h.ticker.tick())["full"] and r, timeout=10, what="a full scan"
    )  # the clock stands: no interval scan is due
    assert result["full"] == "overflow"
    assert woke(frt, a1)
    assert any(getattr(r, "event", "") == "notification_watch_overflow" for r in caplog.records)


def unwatched_gauge() -> float | None:
    return metrics.registry().get_sample_value("tidings_sync_unwatched_agents")


class Limited(INotify):  # type: ignore[misc]
    """``max_user_watches`` reached after ``budget`` watches (as ENOSPC says)."""

    budget = 4

    def add_watch(self, path: Any, mask: int) -> int:
        if Limited.budget <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        Limited.budget -= 1
        return int(super().add_watch(path, mask))


def test_acceptance3_watch_limit_scans_the_rest_every_tick_and_warns(
    frt: Runtime, clock: FakeClock, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 15 acceptance 3: past the watch limit, the agents left over are visited
    every tick (and a full scan runs at once), with a warning and a metric."""
    caplog.set_level(logging.WARNING, logger="tidings")
    records = agents(frt, tmp_path, 3)
    Limited.budget = 4  # a0: workdir + .notification; a1: the same; a2: none
    watcher = Watcher(Limited)
    try:
        h = Harness(frt, clock, watcher)
        first = h.tick()
        assert first["full"] == "watch_limit" and "a2" in first["changed"]
        assert any(getattr(r, "event", "") == "notification_watch_limit" for r in caplog.records)
        assert unwatched_gauge() == 1
        for record in records:
            woke(frt, record)
        for _ in range(3):
            assert h.tick()["changed"] == ["a2"]
        write_direct(records[2].root, "mcp.x.json", {"header": "no watch here"})
        assert h.tick()["changed"] == ["a2"] and woke(frt, records[2])
        Limited.budget = 10  # watches freed: the next full scan watches a2 again
        wait_until(lambda: h.tick()["full"], timeout=5, what="the next full scan")
        assert h.tick()["changed"] == ["a2"]  # newly watched: visited once
        assert h.tick()["changed"] == [] and unwatched_gauge() == 0
    finally:
        watcher.close()


def test_c27_registration_and_removal_while_running(
    frt: Runtime, clock: FakeClock, watcher: Watcher, tmp_path: Path
) -> None:
    h, (a0, _, _) = started(frt, clock, watcher, tmp_path)
    watches = watcher.watches
    late = make_agent(frt, tmp_path / "late", "late")
    write_direct(late.root, "mcp.x.json", {"header": "before the first tick"})
    assert "late" in h.tick()["changed"] and woke(frt, late)
    assert watcher.watches == watches + 2
    write_direct(late.root, "mcp.x.json", {"header": "after"})
    h.tick_until_visited("late")
    assert woke(frt, late)
    AgentRegistry(frt.redis).remove("a0")
    h.tick()
    assert watcher.watches == watches
    write_direct(a0.root, "mcp.x.json", {"header": "nobody listens"})
    write_direct(late.root, "mcp.marker.json", {"header": "later"})
    assert "a0" not in h.tick_until_visited("late")["changed"]


def test_c27_a_workdir_created_after_registration(
    frt: Runtime, clock: FakeClock, watcher: Watcher, tmp_path: Path
) -> None:
    h, _ = started(frt, clock, watcher, tmp_path)
    root = tmp_path / "later" / "agent"
    (tmp_path / "later").mkdir()
    record = AgentRecord(agent_id="later", workdir=str(root), host=TEST_HOST)
    AgentRegistry(frt.redis).put(record)
    h.tick()
    root.mkdir()
    write_direct(root, "mcp.x.json", {"header": "first write"})
    wait_until(lambda: h.tick() and woke(frt, record), timeout=5, what="the wake")
    watches = watcher.watches
    (root / ".notification" / "daemon").mkdir()
    h.tick_until_visited("later")
    assert watcher.watches == watches + 1  # the daemon folder is watched too
    (root / ".notification" / "daemon" / "d1.json").write_text("{}")
    h.tick_until_visited("later")


def test_d9_a_due_delay_is_visited_without_any_event(
    frt: Runtime, clock: FakeClock, watcher: Watcher, tmp_path: Path
) -> None:
    h, (a0, _, _) = started(frt, clock, watcher, tmp_path)
    state = active_state(clock.now(), seconds=600)
    put_state(a0, state)
    h.tick_until_visited("a0")
    assert frt.redis.zscore(keys.sync_due(TEST_HOST), "a0") == state["deadline_epoch"]
    wait_until(lambda: h.tick()["changed"] == [], timeout=5, what="the write's last event")
    assert [h.tick()["changed"] for _ in range(3)] == [[]] * 3
    clock.set(state["deadline_epoch"])
    assert "a0" in h.tick()["changed"]  # the deadline passed: visited, no event needed
    assert state_of(a0)["status"] == "published" and woke(frt, a0)  # the alarm (D14)


def test_c27_an_unfinished_visit_is_repeated_next_tick(
    frt: Runtime,
    clock: FakeClock,
    watcher: Watcher,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h, (a0, _, _) = started(frt, clock, watcher, tmp_path)
    real = host_tick.sync_agent
    monkeypatch.setattr(
        host_tick,
        "sync_agent",
        lambda rt, a, known: {**real(rt, a, known), "stable": False, "retry": True},
    )
    write_direct(a0.root, "mcp.x.json", {"header": "torn read"})
    h.tick_until_visited("a0")
    monkeypatch.setattr(host_tick, "sync_agent", real)
    assert h.tick()["changed"] == ["a0"]
    assert h.tick()["changed"] == []


def test_c27_without_a_watcher_every_tick_is_a_full_scan(
    frt: Runtime, clock: FakeClock, tmp_path: Path
) -> None:
    h, (a0, _, _) = started(frt, clock, None, tmp_path)
    write_direct(a0.root, "mcp.x.json", {"header": "news"})
    assert h.tick()["full"] == "no_watcher" and woke(frt, a0)
    frt.redis.set(keys.sync_running(TEST_HOST), "1")  # the previous scan still runs
    assert h.tick()["full"] == ""


def test_a_tick_that_finds_redis_gone_is_one_log_line_and_the_next_catches_up(
    frt: Runtime,
    clock: FakeClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stop ends the failover retries at once, so the tick job meets the error: it logs
    a line (not APScheduler's traceback); any other error still propagates."""
    capture(caplog)
    h, (a0, _, _) = started(frt, clock, None, tmp_path)

    def fails_with(error: Exception) -> Any:
        def pipeline(*_: Any, **__: Any) -> Any:
            raise error

        return pipeline

    with monkeypatch.context() as patch:
        patch.setattr(frt.redis, "pipeline", fails_with(redis.ConnectionError("gone")))
        run_tick(h.ticker)
        patch.setattr(frt.redis, "pipeline", fails_with(ValueError("a bug")))
        with pytest.raises(ValueError):
            run_tick(h.ticker)
    assert events(caplog, "notification_sync_failed") == [
        {"host": TEST_HOST, "error": "ConnectionError", "detail": "gone"}
    ]
    write_direct(a0.root, "mcp.x.json", {"header": "news"})
    clock.advance(1.0)
    run_tick(h.ticker)
    assert woke(frt, a0)
