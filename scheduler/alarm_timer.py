"""A precise timer beside the alarm jobs (delay.md D15; issue 33).

APScheduler's loop reaches a due alarm job through its job store (Redis round trips)
and its executor's thread hand-off, a few milliseconds after the run date. The
alarm itself then still has the run fence and D11's durable ``expiring`` write to
do. This timer takes the first part off the alarm's path: it mirrors the alarm job
store (every job added is armed here at its run date, every job removed disarmed),
and one thread prepares each alarm :data:`LEAD_SECONDS` before its deadline (the run
fence, the agent's record), rehearses D17's first reads just before the deadline (a
thread that slept that long reads cold), waits for the deadline itself and runs D17 at
once.

The job still fires as D15 says. Its body :meth:`AlarmTimer.claim`\\ s the request
first: if the timer has published the alarm (or found none owed) the job has nothing
left to do; if the timer has not started on it (a slower alarm ahead of it, a
restart), the job takes it over and the timer forgets it; if the timer failed, the job
runs its own path (D17 is idempotent, so a duplicate is a no-op either way).
"""

from __future__ import annotations

import heapq
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from tidings.jobs import log
from tidings.store.clock import Clock

#: How long before its deadline an alarm is prepared (s): the fence's round trip and the
#: record read happen here, so only D17's own reads and writes come after the deadline.
LEAD_SECONDS = 0.05
#: How long a job's body waits for the timer's run of the same request (s); past it the
#: job runs its own path (a duplicate is a no-op, D17).
CLAIM_WAIT_SECONDS = 5.0
#: Outcomes kept for the jobs that have yet to ask (each job asks once, moments later).
MAX_OUTCOMES = 10_000

#: ``fire(agent_id, request_id, deadline, wait) -> done``: prepare, ``wait(deadline)``
#: (``False``: the timer closed), run D17; ``True`` when no alarm for the request is owed.
Fire = Callable[[str, str, float, Callable[[float], bool]], bool]


@dataclass(order=True)
class _Armed:
    deadline: float
    request_id: str = field(compare=False)
    agent_id: str = field(compare=False)


class AlarmTimer:
    """One thread that fires armed alarms on time, in deadline order (real time)."""

    def __init__(
        self, fire: Fire, clock: Clock, *, lead_seconds: float = LEAD_SECONDS, name: str = ""
    ) -> None:
        self._fire = fire
        self._clock = clock
        self._lead = lead_seconds
        self._cond = threading.Condition()
        self._closed = threading.Event()
        self._heap: list[_Armed] = []
        #: request id -> the entry the heap holds for it (others in the heap are stale).
        self._armed: dict[str, _Armed] = {}
        self._firing: set[str] = set()
        self._outcomes: OrderedDict[str, bool] = OrderedDict()
        self._thread = threading.Thread(
            target=self._run, name=f"tidings-alarm-timer{name}", daemon=True
        )
        self._thread.start()

    def arm(self, agent_id: str, request_id: str, deadline: float) -> None:
        """Fire ``request_id`` at ``deadline`` (re-arming an id replaces its entry)."""
        entry = _Armed(deadline, request_id, agent_id)
        with self._cond:
            if self._closed.is_set() or request_id in self._firing:
                return
            self._outcomes.pop(request_id, None)
            self._armed[request_id] = entry
            heapq.heappush(self._heap, entry)
            self._cond.notify_all()

    def disarm(self, request_id: str) -> None:
        """Forget ``request_id`` unless it is being fired (that run finishes)."""
        with self._cond:
            self._armed.pop(request_id, None)

    def disarm_all(self) -> None:
        with self._cond:
            self._armed.clear()

    def claim(self, request_id: str, timeout: float = CLAIM_WAIT_SECONDS) -> bool:
        """For the job's body: ``True`` when the timer has done this request's D17 (nothing
        is owed); ``False`` when the caller must run it (then the timer will not)."""
        give_up = self._clock.monotonic() + timeout
        with self._cond:
            self._armed.pop(request_id, None)
            while request_id in self._firing:
                left = give_up - self._clock.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return self._outcomes.pop(request_id, False)

    def armed(self) -> int:
        with self._cond:
            return len(self._armed)

    def close(self) -> None:
        with self._cond:
            self._closed.set()
            self._armed.clear()
            self._cond.notify_all()
        self._thread.join(CLAIM_WAIT_SECONDS)

    def _wait_until(self, deadline: float) -> bool:
        """Sleep until the wall clock reaches ``deadline``; ``False`` if closed first."""
        while (left := deadline - self._clock.now()) > 0:
            if self._closed.wait(left):
                return False
        return not self._closed.is_set()

    def _next(self) -> _Armed | None:
        """The earliest live entry (stale heap entries are dropped on the way)."""
        while self._heap:
            head = self._heap[0]
            if self._armed.get(head.request_id) is head:
                return head
            heapq.heappop(self._heap)
        return None

    def _run(self) -> None:
        with self._cond:
            while not self._closed.is_set():
                entry = self._next()
                if entry is None:
                    self._cond.wait()
                    continue
                early = entry.deadline - self._lead - self._clock.now()
                if early > 0:
                    self._cond.wait(early)
                    continue
                heapq.heappop(self._heap)
                del self._armed[entry.request_id]
                self._firing.add(entry.request_id)
                self._cond.release()
                try:
                    done = self._fire(
                        entry.agent_id, entry.request_id, entry.deadline, self._wait_until
                    )
                except Exception as exc:  # the job's own run is the fallback
                    log.event(
                        "scheduler_alarm_timer_failed",
                        agent_id=entry.agent_id,
                        request_id=entry.request_id,
                        error=type(exc).__name__,
                        detail=str(exc)[:200],
                    )
                    done = False
                finally:
                    self._cond.acquire()
                self._firing.discard(entry.request_id)
                self._outcomes[entry.request_id] = done
                while len(self._outcomes) > MAX_OUTCOMES:
                    self._outcomes.popitem(last=False)
                self._cond.notify_all()
