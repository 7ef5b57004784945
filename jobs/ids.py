"""Inbox event ids (memory-inbox.md M2): the 32 lowercase hex digits of a UUIDv7.

Time-ordered by the host's real clock (never the injectable one: ids must stay
unique across processes) and strictly increasing within one process: within one
millisecond the 74 random bits act as a counter that grows by a random step.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from typing import TypeGuard

#: An inbox event id.
EVENT_ID_RE = re.compile(r"[0-9a-f]{32}")

_RANDOM_BITS = 74
_MAX_STEP = 1 << 32
_lock = threading.Lock()
_last_ms = 0
_last_random = 0


def _compose(ms: int, random: int) -> str:
    rand_a = random >> 62
    rand_b = random & ((1 << 62) - 1)
    value = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    return f"{value:032x}"


def new_uuid7() -> str:
    """A fresh UUIDv7 as 32 hex digits, greater than every id this process made before."""
    global _last_ms, _last_random
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms > _last_ms:
            random = secrets.randbits(_RANDOM_BITS - 1)
        else:
            ms = _last_ms
            random = _last_random + 1 + secrets.randbelow(_MAX_STEP)
            if random >> _RANDOM_BITS:
                ms, random = ms + 1, secrets.randbits(_RANDOM_BITS - 1)
        _last_ms, _last_random = ms, random
        return _compose(ms, random)


def is_event_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and EVENT_ID_RE.fullmatch(value) is not None
