"""Prompt visits (channels.md C27): a change starts its agent's visit within the debounce.

A filesystem watcher's report and a flush this host's worker committed *poke* an
agent; its visit starts :attr:`PromptVisits.debounce` seconds after the first poke
(``TIDINGS_VISIT_DEBOUNCE_MS``), so the changes that arrive meanwhile — a burst of
writes, the flush and the watcher reporting that flush — make one visit. A poke
while the agent's visit runs asks for one more visit after it, a debounce later: one
agent's visits never overlap in this process, and a burst costs at most one visit
per debounce window. A visit that finds the agent busy elsewhere (another process
visits it) is tried again a debounce later, a bounded number of times; the
periodic tick stays the backstop for whatever a prompt visit misses.

Plain threads, as in the scheduler: a few of them run visits, so that one slow
agent does not hold back the wake of another. A thread takes every agent due at that
moment (up to :data:`BATCH_LIMIT`), so that their Redis reads go out in one pipeline
as the tick's do. Only one thread visits at a time unless the running batch has taken
longer than :data:`STALL_SECONDS` (a stuck agent): a visit is CPU work under the GIL,
and two threads visiting side by side each wait for the GIL after every file and Redis
call, so a host that fell behind stayed behind (bench/wake.py: wake p99 ~1.2 s at 200
changes/s over 2,000 agents with two threads racing, ~30-70 ms with one).
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable, Collection, Iterable
from functools import partial

from tidings.jobs import log, metrics
from tidings.jobs.consumer import prefetch_records, sync_agent
from tidings.jobs.runtime import Runtime
from tidings.jobs.tick.host import next_visit
from tidings.store import keys

#: Threads that run prompt visits in one process.
VISIT_THREADS = 2
#: Attempts of a visit that keeps finding its agent busy in another process (about two
#: seconds at the default debounce) before the tick is left to it.
BUSY_ATTEMPTS = 200
#: The most agents one thread takes at once (a batch of ordinary visits of 20 channels
#: takes ~25 ms, well inside :data:`STALL_SECONDS` even on a loaded host).
BATCH_LIMIT = 8
#: How long a running batch may take before another thread starts the next one beside
#: it (s): a stuck agent, not a busy moment, is what this is for.
STALL_SECONDS = 0.25
#: How long :meth:`PromptVisits.close` waits for a running visit (s).
CLOSE_TIMEOUT_SECONDS = 10.0

#: Visits of some agents, one after another: ``visit(agent_ids)`` → the ids of those
#: found busy (visited elsewhere at that moment: try again).
Visit = Callable[[list[str]], Collection[str]]


class PromptVisits:
    """The prompt visits of one process; thread-safe. ``debounce`` in seconds."""

    def __init__(
        self,
        visit: Visit,
        debounce: float,
        *,
        threads: int = VISIT_THREADS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.debounce = debounce
        self._visit, self._monotonic = visit, monotonic
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._due: dict[str, float] = {}  # pending agent -> when its visit starts
        self._running: set[str] = set()
        self._batches: dict[int, float] = {}  # thread id -> when its running batch began
        self._again: set[str] = set()  # poked while its visit ran
        self._busy: dict[str, int] = {}
        self._closed = False
        #: Visits started and pokes received (figures for bench/wake.py and tests).
        self.visits = 0
        self.pokes = 0
        self._threads = [
            threading.Thread(target=self._serve, name=f"tidings-visit-{n}", daemon=True)
            for n in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def poke(self, agent_ids: Iterable[str]) -> None:
        """These agents changed: visit each within the debounce (coalesced)."""
        with self._cond:
            for agent_id in agent_ids:
                self.pokes += 1
                if agent_id in self._running:
                    self._again.add(agent_id)
                elif agent_id not in self._due:
                    self._plan(agent_id)

    def pending(self) -> int:
        """Agents whose visit waits or runs."""
        with self._cond:
            return len(self._due) + len(self._running)

    def close(self) -> None:
        """Stop: pending visits are dropped (the tick is the backstop), running ones end."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(CLOSE_TIMEOUT_SECONDS)

    # -- inside (the caller holds the condition) ----------------------------------------

    def _plan(self, agent_id: str) -> None:
        """Plan the agent's visit a debounce from now. Only a plan into an empty heap wakes
        the threads: each waiting thread already wakes at the heap's first due time (or
        at a stall), and a later plan is due after it; a thread that ends a batch times
        the next one itself. (A wake per poke and per batch, the woken thread only
        going back to sleep, cost the visit threads ~0.08 ms of CPU a change at 200
        changes/s over 2,000 agents: 17 context switches a change, now 6.7.)"""
        when = self._monotonic() + self.debounce
        if not self._heap:
            self._cond.notify_all()  # threads waiting for no deadline, or past this one
        self._due[agent_id] = when
        heapq.heappush(self._heap, (when, next(self._seq), agent_id))

    def _next(self) -> list[str]:
        """Wait for due agents and take them (``[]`` once closed)."""
        while not self._closed:
            if not self._heap:
                self._cond.wait()
                continue
            now = self._monotonic()
            wait = max(self._heap[0][0] - now, self._stall_wait(now))
            if wait > 0:
                self._cond.wait(wait)
                continue
            taken: list[str] = []
            while self._heap and self._heap[0][0] <= now and len(taken) < BATCH_LIMIT:
                _, _, agent_id = heapq.heappop(self._heap)
                del self._due[agent_id]
                self._running.add(agent_id)
                taken.append(agent_id)
            self.visits += len(taken)
            self._batches[threading.get_ident()] = now
            return taken
        return []

    def _stall_wait(self, now: float) -> float:
        """How long until another batch may start beside those running (0: now): once
        each of them has run for :data:`STALL_SECONDS`."""
        if not self._batches:
            return 0.0
        return max(self._batches.values()) + STALL_SECONDS - now

    def _serve(self) -> None:
        while True:
            with self._cond:
                taken = self._next()
            if not taken:
                return
            busy: Collection[str] = ()
            try:
                busy = self._visit(taken)
            except Exception as exc:  # a visit answers its failures; this is a last guard
                log.event(
                    "notification_prompt_visit_failed",
                    agent_ids=taken[:10],
                    error=type(exc).__name__,
                    detail=str(exc)[:200],
                    exc_info=exc,
                )
            with self._cond:
                del self._batches[threading.get_ident()]
                for agent_id in taken:
                    self._finished(agent_id, agent_id in busy)

    def _finished(self, agent_id: str, busy: bool) -> None:
        self._running.discard(agent_id)
        tries = self._busy.get(agent_id, 0) + 1 if busy else 0
        again = agent_id in self._again or 0 < tries < BUSY_ATTEMPTS
        self._again.discard(agent_id)
        if tries and again:
            self._busy[agent_id] = tries
        else:
            self._busy.pop(agent_id, None)
        if again and not self._closed and agent_id not in self._due:
            self._plan(agent_id)


def prompt_visit(rt: Runtime, agent_ids: list[str]) -> set[str]:
    """A prompt visit of each of ``agent_ids`` that lives here (C27); returns those being
    visited elsewhere. What one needs next (a retry, a delay's deadline) goes to the
    host's *due* set, which the tick reads."""
    records, known = prefetch_records(rt, agent_ids)  # one round trip, as the tick's
    agents = [
        a
        for a in records
        if a is not None and a.host == rt.settings.host and os.path.isdir(a.workdir)
    ]
    busy: set[str] = set()
    due: dict[str, float] = {}
    for agent in agents:
        outcome = sync_agent(rt, agent, known[agent.agent_id])  # never raises
        if outcome.get("busy"):
            busy.add(agent.agent_id)
        when = next_visit(rt, outcome, agent)
        if when is not None:
            due[agent.agent_id] = when
    metrics.synced("prompt", len(agents))
    if due:
        rt.redis.zadd(keys.sync_due(rt.settings.host), due)
    return busy


def start_prompt_visits(rt: Runtime) -> PromptVisits | None:
    """This process's prompt visits, or ``None`` when ``TIDINGS_PROMPT_VISITS`` is off."""
    if not rt.settings.prompt_visits:
        return None
    return PromptVisits(partial(prompt_visit, rt), rt.settings.visit_debounce_ms / 1000)
