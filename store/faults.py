"""Test-only fault injection (interfaces.md, Environment).

With ``TIDINGS_ENABLE_FAULTS=1`` and ``TIDINGS_FAULTS=point[,point]`` the process
exits at once with code 75 when it reaches a named point, as if it had been
killed there. ``point@N`` exits on the N-th time the point is reached. Without
the enabling variable every call is a no-op, so production code can keep the
calls in place.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import Counter

#: Exit code of a process stopped by an injected fault.
FAULT_EXIT_CODE = 75

#: The points the code reaches; a name outside this set is a typo in a test.
POINTS = frozenset(
    {
        "flush.before_write",
        "flush.after_write",
        "expire.after_expiring",
        "expire.after_alarm",
        "admit.before_script",
        "finish.after_reconcile",
    }
)

_hits: Counter[str] = Counter()
_lock = threading.Lock()


def _armed() -> dict[str, int]:
    if os.environ.get("TIDINGS_ENABLE_FAULTS") != "1":
        return {}
    armed: dict[str, int] = {}
    for item in os.environ.get("TIDINGS_FAULTS", "").split(","):
        name, _, nth = item.strip().partition("@")
        if name:
            armed[name] = int(nth) if nth.isdigit() and int(nth) > 0 else 1
    return armed


def reach(point: str) -> None:
    """Exit the process here if a test armed ``point``."""
    if point not in POINTS:
        raise ValueError(f"unknown fault point {point!r}; known: {sorted(POINTS)}")
    armed = _armed()
    if point not in armed:
        return
    with _lock:
        _hits[point] += 1
        hit = _hits[point]
    if hit >= armed[point]:
        sys.stderr.write(f"tidings: fault injected at {point}\n")
        sys.stderr.flush()
        os._exit(FAULT_EXIT_CODE)
