"""The world a contract scenario runs in: one store, one agent, a clock the test moves.

Every path under test opens its own client on the same store (as a separate process
would) and shares the :class:`StepClock`, so a scenario can put a delay's deadline
behind it in no time while workers and waits still run in real time.

A *racing* world (issue 33, acceptance 2) also runs what the scheduler process runs
besides its tick: prompt visits of the agent, started by a real filesystem watcher over
its workdir and by every committed flush of a worker a path starts (channels.md C27).
They race the scenario's reads, acts and ticks, and each other; the rules must hold
all the same.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from inotify_simple import INotify
from redis.exceptions import NoPermissionError

from tests.support.memory_repo import MemoryRepo
from tests.support.polling import wait_until
from tidings._agent import Agent
from tidings._hub import Hub
from tidings.jobs.consumer import coherent, delay_alarm
from tidings.jobs.consumer.delivery import check_placeholder
from tidings.jobs.consumer.read import Observation
from tidings.jobs.consumer.visit import SyncOutcome, sync_agent
from tidings.jobs.guard import ErrorAnswer
from tidings.jobs.tick import PromptVisits, start_prompt_visits
from tidings.scheduler.watcher import Watcher
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord
from tidings.store.settings import Settings

#: Where the clock starts (Unix seconds).
START = 1_790_000_000.0
#: The memory repository's files before the agent's first observation.
MEMORY_FILES = {"MEMORY.md": "remember\n", "notes/plan.md": "p\n"}
#: A racing world's prompt-visit debounce (ms): the default ``TIDINGS_VISIT_DEBOUNCE_MS``.
RACING_DEBOUNCE_MS = 10.0
#: How many debounces the prompt visits must stay idle for a racing world to count as
#: settled: the watcher's delivery of the last change, its debounce, and a margin.
SETTLED_DEBOUNCES = 5
#: The longest a racing world waits to settle or for its agent's visit lock (s).
SETTLE_TIMEOUT = 10.0
#: The longest one read of a racing world's watcher waits for an event (ms).
IDLE_READ_MS = 20


class StepClock:
    """Wall time that moves only when told (``advance``); ``monotonic`` and ``sleep`` are
    real, so a publish waiting for a worker's flush waits as it would in production."""

    def __init__(self, start: float = START) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@contextlib.contextmanager
def unreadable(how: str) -> Iterator[None]:
    """Every coherent read of this process fails (``refused``: the store answers NOPERM,
    as it does to the monitor role) or stays unstable (``unstable``: every attempt's
    bookends differ), for whichever path reads (channels.md C24)."""
    with pytest.MonkeyPatch.context() as patch:
        if how == "refused":

            def refuse(*args: Any) -> None:
                raise NoPermissionError("this user has no permissions to run the 'get' command")

            patch.setattr(delay_alarm, "reconcile", refuse)
        else:
            patch.setattr(
                coherent,
                "bare_read",
                lambda *a, **k: Observation(
                    False, [["soul.json", 1, "x"]], [], {"soul": {"header": "half"}}, attempts=3
                ),
            )
        yield


class BriefReads(INotify):  # type: ignore[misc]
    """The kernel's inotify, each read waiting at most :data:`IDLE_READ_MS`: an event is
    still read the moment it is queued, but :meth:`World.close` stops the watcher in that
    time rather than in the scheduler's 200 ms, once for each of about a hundred racing
    scenarios."""

    def read(self, timeout: float | None = None, read_delay: float | None = None) -> Any:
        return super().read(IDLE_READ_MS, read_delay)


class World:
    """One agent with a memory repository on ``store``; ``producer`` is an inline agent
    that stands for the outside producers and the orchestrator's own calls."""

    def __init__(
        self,
        new_client: Callable[[], Any],
        tmp_path: Path,
        *,
        memory: bool = True,
        new_control: Callable[[], Any] | None = None,
        racing: bool = False,
    ) -> None:
        self.new_client = new_client
        self.racing = racing
        #: Clients of a control store of its own (a cluster's broker), else ``None``.
        self.new_control = new_control
        self.clock = StepClock()
        # Not racing, the world alone decides when the agent is visited (its tick), so
        # a scenario counts exactly the wakes a tick gives. Racing, a worker a path
        # starts pokes its own prompt visits after each committed flush, as a real
        # ``tidings worker`` does (C27).
        self.settings = Settings(
            host=f"contract-{uuid.uuid4().hex[:8]}",
            redis_url=None,
            prompt_visits=racing,
            visit_debounce_ms=RACING_DEBOUNCE_MS,
        )
        self.workdir = tmp_path / "workdir"
        self.workdir.mkdir()
        self.hub = self.open_hub()
        # A memory repository costs a git init and an observation: only where it is used.
        repo = MemoryRepo(tmp_path / "memory", MEMORY_FILES) if memory else None
        self.producer: Agent = self.hub.agent(
            self.workdir, memory_repo=repo.root if repo else None, inline=True
        )
        self.record: AgentRecord = self.producer.record
        if repo is not None:
            assert self.producer.startup()["memory"]["status"] == "baseline"
        self._memory = repo
        #: A racing world's prompt visits and the watcher that starts them, wired as the
        #: scheduler wires its own (scheduler/service.py), else ``None``. The watcher
        #: counts the agent *fresh* (visited once by the scheduler's tick, for writes made
        #: before its watch): here the scenario's own ticks visit it in full, so nothing
        #: takes that mark.
        self.visits: PromptVisits | None = None
        self.watcher: Watcher | None = None
        if racing:
            self.visits = start_prompt_visits(self.hub.runtime)
            assert self.visits is not None
            self.watcher = Watcher(BriefReads, on_change=self.visits.poke)
            self.watcher.set_agents({self.record.agent_id: self.workdir})

    @property
    def memory(self) -> MemoryRepo:
        assert self._memory is not None, "this world was made without a memory repository"
        return self._memory

    def clients(self) -> dict[str, Any]:
        """``connect()``'s client arguments: new clients of the world's store(s)."""
        control = self.new_control() if self.new_control is not None else None
        return {"client": self.new_client(), "broker_client": control}

    def open_hub(self, *, declare_actors: bool = True) -> Hub:
        """A hub of its own clients on the world's store(s) and clock."""
        clients = self.clients()
        return Hub(
            clients["client"],
            self.settings,
            clock=self.clock,
            url="client",
            owns_client=True,
            declare_actors=declare_actors,
            control=clients["broker_client"],
        )

    def close(self) -> None:
        # The watcher first: no poke after the visits are closed; the visits before the
        # hub, whose clients they read with.
        if self.watcher is not None:
            self.watcher.close()
        if self.visits is not None:
            self.visits.close()
        self.hub.close()

    # -- what the scenarios look at ------------------------------------------------

    def tick(self) -> SyncOutcome | ErrorAnswer:
        """One sync tick for the agent (channels.md C27), as the scheduler runs it.

        Racing, it runs at once, whatever prompt visit runs; one that held the agent's
        visit lock makes it ``busy``, and the scheduler's next tick then visits: here,
        once the world's visits are idle. Then the world settles."""
        outcome = sync_agent(self.hub.runtime, self.record)
        if self.visits is None:
            return outcome
        if outcome.get("busy"):
            later = wait_until(
                self._tick_when_idle, SETTLE_TIMEOUT, what="a tick that finds the agent free"
            )
            assert later is not None  # wait_until returns a truthy answer
            outcome = later
        self.settle()
        return outcome

    def _tick_when_idle(self) -> SyncOutcome | ErrorAnswer | None:
        assert self.visits is not None
        if self.visits.pending():
            return None
        outcome = sync_agent(self.hub.runtime, self.record)
        return None if outcome.get("busy") else outcome

    def settle(self) -> None:
        """Racing: wait until no prompt visit that the scenario's last steps started is
        still to come — the world's visits idle, and no poke, for
        :data:`SETTLED_DEBOUNCES` debounces. Not racing, there is nothing to wait for.

        A path's worker pokes prompt visits of its own, which this does not wait for: the
        watcher saw that worker's flush too, so a visit of the world's ran after it, and
        theirs finds that change woken for or delivered already."""
        visits = self.visits
        if visits is None:
            return
        window = SETTLED_DEBOUNCES * visits.debounce
        since: float | None = None  # idle with no new poke since then
        seen = visits.pokes

        def settled() -> bool:
            nonlocal since, seen
            now, pokes = time.monotonic(), visits.pokes
            if visits.pending() or pokes != seen:
                since, seen = None, pokes
                return False
            if since is None:
                since = now
            return now - since >= window

        wait_until(settled, SETTLE_TIMEOUT, interval=visits.debounce, what="prompt visits idle")

    def wakes(self) -> int:
        """The wake signals the agent has had; a racing world settles first."""
        self.settle()
        return int(self.hub.redis.xlen(AgentKeys(self.record.agent_id).wake_stream))

    def file(self, rel: str) -> bytes | None:
        path = self.workdir / rel
        return path.read_bytes() if path.exists() else None

    def channel(self, name: str) -> Any:
        data = self.file(f".notification/{name}.json")
        return json.loads(data) if data is not None else None

    def delay_status(self) -> str | None:
        data = self.file(".notification/.delay_state.json")
        return json.loads(data)["status"] if data is not None else None

    def deliver(self) -> dict[str, Any]:
        """A delivery by the orchestrator (the stamped check, C24)."""
        return self.producer.stamp(check_placeholder())
