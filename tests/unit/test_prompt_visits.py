"""The prompt-visit debouncer (channels.md C27; issue 33): coalesced, never overlapping
for one agent, a poke during a visit gets a visit after it, a busy agent is retried a
bounded number of times."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.polling import wait_until
from tidings.jobs.tick import prompt
from tidings.jobs.tick.prompt import PromptVisits
from tidings.store import locks

DEBOUNCE = 0.01


class Visits:
    """A visit that records who ran, how many at once per agent, and what it saw."""

    def __init__(self, seconds: float = 0.0, busy: int = 0) -> None:
        self.seconds, self.busy = seconds, busy
        self.lock = threading.Lock()
        self.running: Counter[str] = Counter()
        self.overlap = 0
        self.done: list[tuple[str, float]] = []
        self.attempts = 0

    def __call__(self, agent_ids: list[str]) -> set[str]:
        busy = set()
        for agent_id in agent_ids:
            if not self.one(agent_id):
                busy.add(agent_id)
        return busy

    def one(self, agent_id: str) -> bool:
        with self.lock:
            self.attempts += 1
            if self.attempts <= self.busy:
                return False
            self.running[agent_id] += 1
            self.overlap = max(self.overlap, self.running[agent_id])
        started = time.monotonic()
        time.sleep(self.seconds)
        with self.lock:
            self.running[agent_id] -= 1
            self.done.append((agent_id, started))
        return True


def test_c27_a_burst_of_1000_pokes_is_one_visit_per_debounce_window() -> None:
    visit = Visits(seconds=0.002)
    visits = PromptVisits(visit, DEBOUNCE, threads=4)
    try:
        started = time.monotonic()
        last = 0.0
        for _ in range(1000):
            visits.poke(["a1"])
            last = time.monotonic()
        wait_until(lambda: visits.pending() == 0, timeout=10, what="the visits to end")
        elapsed = last - started
        assert visit.overlap == 1
        assert 1 <= len(visit.done) <= elapsed / DEBOUNCE + 2
        # the visit after the last poke started after it: the last write is seen
        assert visit.done[-1][1] >= last
    finally:
        visits.close()


def test_c27_one_agents_visits_never_overlap_and_others_run_beside() -> None:
    visit = Visits(seconds=0.02)
    visits = PromptVisits(visit, DEBOUNCE, threads=3)
    try:
        for _ in range(5):
            visits.poke(["a1", "a2"])
            time.sleep(0.012)
        wait_until(lambda: visits.pending() == 0, timeout=10, what="the visits to end")
        assert visit.overlap == 1
        assert {a for a, _ in visit.done} == {"a1", "a2"}
    finally:
        visits.close()


class Batches:
    """A visit that records how many batches ran at once; ``slow`` agents take 1 s."""

    def __init__(self, slow: frozenset[str] = frozenset()) -> None:
        self.slow = slow
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.done: dict[str, float] = {}

    def __call__(self, agent_ids: list[str]) -> set[str]:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        for agent_id in agent_ids:
            time.sleep(1.0 if agent_id in self.slow else 0.001)
            with self.lock:
                self.done[agent_id] = time.monotonic()
        with self.lock:
            self.running -= 1
        return set()


def test_c27_one_batch_at_a_time_unless_it_stalls() -> None:
    """Visits are CPU work under the GIL: quick batches never run side by side (two
    racing for the GIL made a host that fell behind stay behind); a batch that runs
    past STALL_SECONDS lets another thread visit the other agents beside it."""
    quick = Batches()
    visits = PromptVisits(quick, 0.001, threads=2)
    try:
        for n in range(200):
            visits.poke([f"a{n % 50}"])
            time.sleep(0.0005)
        wait_until(lambda: visits.pending() == 0, timeout=10, what="the visits to end")
        assert quick.most == 1
    finally:
        visits.close()
    stalled = Batches(slow=frozenset({"slow"}))
    visits = PromptVisits(stalled, 0.001, threads=2)
    try:
        visits.poke(["slow"])
        wait_until(lambda: stalled.running == 1, timeout=10, what="the slow visit to start")
        poked = time.monotonic()
        visits.poke(["other"])
        wait_until(lambda: "other" in stalled.done, timeout=10, what="the other visit")
        assert stalled.done["other"] - poked < prompt.STALL_SECONDS + 0.2
        assert "slow" not in stalled.done  # it ran beside the stalled one
    finally:
        visits.close()


def test_c27_busy_elsewhere_is_retried_then_left_to_the_tick() -> None:
    visit = Visits(busy=3)
    visits = PromptVisits(visit, 0.001, threads=1)
    try:
        visits.poke(["a1"])
        wait_until(lambda: visit.done, timeout=10, what="the visit after the busy tries")
        assert visit.attempts == 4
    finally:
        visits.close()
    always_busy = Visits(busy=10**6)
    visits = PromptVisits(always_busy, 0.0005, threads=1)
    try:
        visits.poke(["a1"])
        wait_until(lambda: visits.pending() == 0, timeout=10, what="giving up")
        assert always_busy.attempts == prompt.BUSY_ATTEMPTS
    finally:
        visits.close()


def test_c27_the_visit_lock_excludes_threads_and_processes(tmp_path: Path) -> None:
    """One agent's visits never overlap: a second holder, in another thread or another
    process, is refused at once; a workdir without ``.notification`` is not touched."""
    bare = tmp_path / "bare"
    bare.mkdir()
    with locks.attempt(bare, VISIT_SCOPE) as held:
        assert held
        assert not run_in_thread(lambda: enter(bare))
    assert list(bare.iterdir()) == []
    root = tmp_path / "agent"
    (root / ".notification").mkdir(parents=True)
    with locks.attempt(root, VISIT_SCOPE) as held:
        assert held
        with locks.attempt(root, VISIT_SCOPE) as again:  # the same thread: re-entrant
            assert again
        assert not run_in_thread(lambda: enter(root))
        # another process: an open file description of its own (flock is per description)
        other = os.open(root / locks.LOCK_DIR / locks.lock_file_name(VISIT_SCOPE), os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(other)
    assert run_in_thread(lambda: enter(root))


VISIT_SCOPE = "agent-visit"


def enter(root: Path) -> bool:
    with locks.attempt(root, VISIT_SCOPE) as held:
        return held


def run_in_thread(fn: Callable[[], bool]) -> bool:
    answer: list[bool] = []
    thread = threading.Thread(target=lambda: answer.append(fn()))
    thread.start()
    thread.join(10)
    return answer[0]


def test_c27_only_a_plan_into_an_empty_heap_wakes_the_visit_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each waiting thread already wakes at the first due time (or at a stall), and a
    later plan is due after it: pokes into a non-empty plan, or of an agent already
    planned, wake no thread (a wake per poke was CPU spent going back to sleep)."""
    visits = PromptVisits(Visits(), 10.0, threads=0)  # no thread: count the wakes only
    wakes: list[int] = []
    notify = visits._cond.notify

    def counted(n: int = 1) -> None:
        wakes.append(n)
        notify(n)

    monkeypatch.setattr(visits._cond, "notify", counted)
    visits.poke(["a1"])
    assert len(wakes) == 1
    visits.poke(["a1", "a2"])
    visits.poke(["a3"])
    assert len(wakes) == 1
    assert visits.pending() == 3
    visits.close()
