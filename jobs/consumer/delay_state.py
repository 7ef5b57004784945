"""The delay state file and what may be read from it (delay.md D5, D7, D8).

``.notification/.delay_state.json`` holds the agent's one delay request. It is
read without locks by every coherent read, so everything here fails open: a
state that is missing, unreadable, malformed or implausible is "no delay", and
an invalid one is reported once per distinct content per process.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tidings.jobs import log
from tidings.jobs.channels import (
    DAEMON,
    DELAY_ALARM,
    Allowlist,
    FileStat,
    channel_file_stat,
    name_error,
    read_daemon,
)
from tidings.jobs.consumer.delay_record import DelayState, is_int
from tidings.jobs.consumer.delay_shapes import TargetStats
from tidings.jobs.runtime import Runtime
from tidings.store.files import atomic_write, safe_read
from tidings.store.jsonfmt import compact_sorted, sha256_hex
from tidings.store.jsonread import Malformed, parse
from tidings.store.models import AgentRecord

#: D5: the state file and its format version.
STATE_FILE = ".notification/.delay_state.json"
STATE_VERSION = 1

ACTIVE, EXPIRING, PUBLISHED, CANCELLED = "active", "expiring", "published", "cancelled"

#: D8: how far ``started_epoch`` may lie in the future (clock skew), in seconds.
START_SKEW_SECONDS = 1.0
#: D8: tolerance of the duration checks, in seconds.
DURATION_TOLERANCE = 0.001

#: The latest deadline a ``YYYY-MM-DDTHH:MM:SSZ`` stamp (and a ``datetime``) can hold:
#: a huge delay cap must not let a request overflow ``gmtime`` (issue 11).
LATEST_DEADLINE_EPOCH = 253_402_300_799
LATEST_DEADLINE_AT = "9999-12-31T23:59:59Z"

#: D7: the scope note attached to a retained event count.
RETAINED_SCOPE = "current mirror entries; not asserted total"

#: Distinct invalid contents remembered per process for D8's log-once rule.
INVALID_LOG_MEMORY = 4096

ReadKind = Literal["absent", "unreadable", "malformed", "ok"]


@dataclass(frozen=True)
class StateRead:
    """One lock-free read of the state file."""

    kind: ReadKind
    value: object = None
    digest: str = ""

    @property
    def state(self) -> DelayState | None:
        """The state record when the file holds a JSON object (parsed once, typed)."""
        if self.kind == "ok" and isinstance(self.value, dict):
            return DelayState.parse(self.value)
        return None

    @property
    def document(self) -> dict[str, object] | None:
        """The file's JSON object as read (for views that show it whole)."""
        return self.value if self.kind == "ok" and isinstance(self.value, dict) else None


def read_state(root: Path) -> StateRead:
    """Read and parse the state (at most 1 MiB, no links followed)."""
    outcome = safe_read(root, STATE_FILE)
    if outcome.kind == "absent":
        return StateRead("absent")
    if not outcome.ok:
        return StateRead("unreadable", digest=f"{outcome.kind}:{outcome.error}")
    digest = sha256_hex(outcome.data)
    parsed = parse(outcome.data)
    if isinstance(parsed, Malformed):
        return StateRead("malformed", digest=digest)
    return StateRead("ok", parsed.value, digest)


def write_state(root: Path, state: Mapping[str, object]) -> None:
    """D5: compact, sorted keys, atomic with fsync (channels.md C16)."""
    atomic_write(root, STATE_FILE, compact_sorted(state).encode("utf-8"))


def _seconds_problem(state: DelayState) -> str | None:
    requested, cap = state.requested_seconds, state.max_seconds
    if requested is None or cap is None or requested < 1 or cap < 1:
        return "requested_seconds and max_seconds must be integers >= 1"
    if requested > cap:
        return "requested_seconds exceeds max_seconds"
    return None


def _time_problem(state: DelayState, now: float) -> str | None:
    started, deadline = state.started_epoch, state.deadline_epoch
    requested, most = state.requested_seconds, state.max_seconds
    if requested is None or most is None:  # checked before, by structural_problem
        return "requested_seconds and max_seconds must be integers"
    if started is None or deadline is None:
        return "started_epoch and deadline_epoch must be finite numbers"
    if started > now + START_SKEW_SECONDS:
        return "started_epoch lies in the future"
    if deadline > LATEST_DEADLINE_EPOCH or started < 0:
        return "started_epoch or deadline_epoch is out of range"
    duration = deadline - started
    if duration < 0:
        return "deadline_epoch precedes started_epoch"
    if duration > most + DURATION_TOLERANCE:
        return "deadline_epoch exceeds max_seconds"
    if abs(duration - requested) > DURATION_TOLERANCE:
        return "deadline_epoch does not match requested_seconds"
    return None


def structural_problem(state: DelayState, now: float) -> str | None:
    """D8's checks of an ``active`` state except "not yet due" and "currently allowed"."""
    if state.version != STATE_VERSION:
        return "unsupported version"
    if state.status != ACTIVE:
        return "status is not active"
    target = state.target
    if target is None or target == DELAY_ALARM or name_error(target) is not None:
        return "target is not a delayable channel name"
    if not state.request_id:
        return "request_id must be a non-empty string"
    return _seconds_problem(state) or _time_problem(state, now)


def is_due(state: DelayState, now: float) -> bool:
    """A structurally valid active state whose deadline has passed."""
    return state.deadline <= now


def invalid_reason(read: StateRead, now: float) -> str | None:
    """Why the state is invalid (D8), or ``None`` when it is absent or merely not live
    (a valid active state, or one that expired, is expiring, published or cancelled)."""
    if read.kind == "absent":
        return None
    if read.kind == "unreadable":
        return f"unreadable ({read.digest})"
    if read.kind == "malformed":
        return "malformed JSON"
    state = read.state
    if state is None:
        return "state is not a JSON object"
    if state.status in (EXPIRING, PUBLISHED, CANCELLED):
        return None if state.version == STATE_VERSION else "unsupported version"
    return structural_problem(state, now)


class _LogOnce:
    """Remembers which invalid contents were already reported in this process."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._seen: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._lock = threading.Lock()

    def first(self, key: tuple[str, str]) -> bool:
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return False
            self._seen[key] = None
            while len(self._seen) > self._size:
                self._seen.popitem(last=False)
            return True


_reported = _LogOnce(INVALID_LOG_MEMORY)


def report_invalid(root: Path, agent_id: str, read: StateRead, now: float) -> None:
    """Log ``notification_delay_state_invalid`` once per distinct content per process."""
    reason = invalid_reason(read, now)
    if reason is not None and _reported.first((str(root), read.digest)):
        log.event("notification_delay_state_invalid", agent_id=agent_id, reason=reason)


def live_target(rt: Runtime, agent: AgentRecord, allow: Allowlist) -> str | None:
    """D1, D8: the target of the agent's live delay, or ``None`` (fail open)."""
    read = read_state(agent.root)
    now = rt.clock.now()
    state = read.state
    if state is None or structural_problem(state, now) is not None:
        report_invalid(agent.root, agent.agent_id, read, now)
        return None
    if state.deadline <= now or not allow.allows(state.target):
        return None
    return state.target


def stats(root: Path, channel: str) -> TargetStats:
    """D7: the target statistics object of ``channel`` (``daemon``: the aggregate)."""
    entry: FileStat | None
    if channel == DAEMON:
        view = read_daemon(root)
        entry = view.fp_entry or None
        payload, problem = view.payload, None
    else:
        entry, payload, problem = channel_file_stat(root, channel)
    if problem is not None:
        return {"present": None, "read_error": problem}
    if entry is None:
        if payload is not None:
            return {"present": None, "read_error": "missing_fingerprint"}
        return {"present": False}
    out: TargetStats = {"present": True, "byte_size": entry[1], "sha256": entry[2]}
    data = payload.get("data") if isinstance(payload, dict) else None
    if isinstance(data, dict):
        count = data.get("count")
        if is_int(count) and count >= 0:
            out["producer_reported_count"] = count
        events = data.get("events")
        if isinstance(events, list):
            out["retained_event_count"] = len(events)
            out["retained_event_count_scope"] = RETAINED_SCOPE
    return out
