"""Clocks: the real one and a fake one for tests.

Jobs never call :func:`time.time` themselves; they take a :class:`Clock` so that
unit tests can move time by hand.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Wall-clock time, Unix seconds."""

    def monotonic(self) -> float:
        """A clock for timeouts that never goes backwards."""

    def sleep(self, seconds: float) -> None:
        """Wait; fake clocks advance instead."""


class SystemClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class FakeClock:
    """A clock that only moves when told to (or when something sleeps on it)."""

    def __init__(self, start: float = 1_790_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        return self.now()

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += max(0.0, seconds)

    def set(self, epoch: float) -> None:
        with self._lock:
            self._now = epoch
