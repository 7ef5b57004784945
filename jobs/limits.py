"""Live-read limits: the delay cap (delay.md D2) and the block cap (block-cap.md B1, B2).

Both are read from the environment on every action that uses them, so a changed
value is honoured without a restart. ``log=False`` is for the settings SHOW,
which never logs.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeGuard

from tidings.jobs import log
from tidings.store.files import safe_read
from tidings.store.jsonread import Parsed, parse

DELAY_CAP_ENV = "LINGTAI_NOTIFICATION_DELAY_MAX_SECONDS"
#: D2: the cap when the variable is unset or invalid.
DEFAULT_DELAY_CAP = 600

MAX_CHARS_ENV = "LINGTAI_NOTIFICATION_MAX_CHARS"
#: B1: default, floor and ceiling of the block cap.
DEFAULT_MAX_CHARS, MIN_MAX_CHARS, MAX_MAX_CHARS = 10_000, 2_048, 10_000
SYSTEM_SETTINGS_FILE = "settings/system.json"

_POSITIVE = re.compile(r"\+?[0-9]+")
#: Accepted values saturate here: any larger one is clamped anyway, and ``int()`` refuses
#: digit strings longer than 4,300 characters.
_SATURATED = 10**18


def _positive_int(raw: str) -> int | None:
    text = raw.strip()
    if not _POSITIVE.fullmatch(text):
        return None
    digits = text.lstrip("+").lstrip("0")
    if len(digits) > len(str(_SATURATED)):
        return _SATURATED
    value = int(digits or "0")
    return min(value, _SATURATED) if value > 0 else None


def delay_cap(*, log_invalid: bool = True) -> int:
    """D2: the largest accepted delay in seconds."""
    raw = os.environ.get(DELAY_CAP_ENV)
    if raw is None:
        return DEFAULT_DELAY_CAP
    value = _positive_int(raw)
    if value is not None:
        return value
    if log_invalid:
        log.event(
            "notification_delay_max_seconds_invalid",
            env=DELAY_CAP_ENV,
            raw_value=raw[:100],
            fallback_seconds=DEFAULT_DELAY_CAP,
        )
    return DEFAULT_DELAY_CAP


_logged_max_chars: set[str] = set()
_logged_lock = threading.Lock()


def _clamp(value: int) -> int:
    return max(MIN_MAX_CHARS, min(MAX_MAX_CHARS, value))


def max_chars(root: Path | None, *, log_invalid: bool = True) -> int:
    """B1: env, else a valid System-v2 value, else 10,000; clamped to 2,048..10,000."""
    raw = os.environ.get(MAX_CHARS_ENV)
    if raw is not None:
        value = _positive_int(raw)
        if value is not None:
            return _clamp(value)
        if log_invalid:
            with _logged_lock:
                first = raw not in _logged_max_chars
                _logged_max_chars.add(raw)
            if first:
                log.event("notification_max_chars_invalid", env=MAX_CHARS_ENV, raw_value=raw[:100])
    system_value = system_v2_max_chars(root) if root is not None else None
    return _clamp(system_value) if system_value is not None else DEFAULT_MAX_CHARS


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> TypeGuard[float]:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


#: B2: every key a System-v2 document may hold, and its validity test.
SYSTEM_V2_FIELDS: dict[str, Callable[[object], bool]] = {
    "schema_version": lambda v: _is_int(v) and v == 2,
    "context_limit": lambda v: v is None or (_is_int(v) and v > 0),
    "max_rpm": lambda v: _is_int(v) and v >= 0,
    "streaming": lambda v: isinstance(v, bool),
    "aed_timeout": lambda v: _is_number(v) and v > 0,
    "max_aed_attempts": lambda v: _is_int(v) and v >= 1,
    "snapshot_interval": lambda v: v is None or (_is_number(v) and v > 0),
    "activeness": lambda v: v is None or (isinstance(v, str) and v.strip() != ""),
    "cache_miss_budget": lambda v: _is_int(v) and v > 0,
    "notification_max_chars": lambda v: _is_int(v) and v > 0,
}


def system_v2_max_chars(root: Path) -> int | None:
    """B2: ``notification_max_chars`` of a wholly valid ``settings/system.json``."""
    outcome = safe_read(root, SYSTEM_SETTINGS_FILE)
    if not outcome.ok:
        return None
    parsed = parse(outcome.data, unique_keys=True)  # C47's depth, no NaN, no repeated key
    if not isinstance(parsed, Parsed):
        return None
    doc = parsed.value
    if not isinstance(doc, dict) or "schema_version" not in doc:
        return None
    for key, value in doc.items():
        check = SYSTEM_V2_FIELDS.get(key)
        if check is None or not check(value):
            return None
    value = doc.get("notification_max_chars")
    return value if _is_int(value) else None
