"""The console's sign-in state: server-side sessions and the login throttle.

A session cookie holds a random id, never the token; the id means something only
while this process keeps it (``POST /logout`` forgets it, and it expires on its own).
Failed sign-ins are counted per client address: past :data:`MAX_FAILURES` in a minute
that address is answered 429 until the minute has passed (interfaces.md "Local trust").
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable

#: How long a session lasts after sign-in (seconds).
SESSION_SECONDS = 12 * 3600
#: Sessions kept at once; signing in past it forgets the oldest.
MAX_SESSIONS = 1024
#: Failed sign-ins one address may make in :data:`FAILURE_WINDOW_SECONDS`.
MAX_FAILURES = 10
FAILURE_WINDOW_SECONDS = 60.0
#: Client addresses whose failures are remembered at once (the oldest are forgotten).
MAX_ADDRESSES = 4096


class Sessions:
    """Session ids with their expiry, in this process only."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, lifetime: float = SESSION_SECONDS
    ) -> None:
        self.clock = clock
        self.lifetime = lifetime
        self.expiry: OrderedDict[str, float] = OrderedDict()

    def start(self) -> str:
        session = secrets.token_urlsafe(32)
        self.expiry[session] = self.clock() + self.lifetime
        while len(self.expiry) > MAX_SESSIONS:
            self.expiry.popitem(last=False)
        return session

    def valid(self, session: str) -> bool:
        expires = self.expiry.get(session)
        if expires is None:
            return False
        if expires <= self.clock():
            del self.expiry[session]
            return False
        return True

    def end(self, session: str) -> None:
        self.expiry.pop(session, None)


class Throttle:
    """Failed sign-ins per client address over the last minute."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, address: str) -> deque[float]:
        times = self.failures.get(address)
        if times is None:
            return deque()
        horizon = self.clock() - FAILURE_WINDOW_SECONDS
        while times and times[0] <= horizon:
            times.popleft()
        if not times:
            del self.failures[address]
        return times

    def blocked(self, address: str) -> float:
        """Seconds until ``address`` may try again (0: it may now)."""
        times = self._recent(address)
        if len(times) < MAX_FAILURES:
            return 0.0
        return max(0.0, times[0] + FAILURE_WINDOW_SECONDS - self.clock())

    def failed(self, address: str) -> None:
        times = self.failures.setdefault(address, deque(maxlen=MAX_FAILURES))
        times.append(self.clock())
        self.failures.move_to_end(address)
        while len(self.failures) > MAX_ADDRESSES:
            self.failures.popitem(last=False)
