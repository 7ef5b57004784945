"""The daemon control record ``.notification/daemon/.tombstone`` (channels.md C31).

The record makes daemon dismissals atomic: a dismissal first writes *cleared*
entries (which events of which mini-file are gone) and only then, best effort,
rewrites the mini-files. An entry applies only while its mini-file still has the
recorded raw sha256, and removes its event keys as a multiset. The record also
holds the daemon batch state and a *pending* receipt that makes an append's
batch-state change crash safe.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tidings.store.errors import TidingsError
from tidings.store.files import atomic_write, safe_read
from tidings.store.jsonfmt import compact_sorted, sha256_hex
from tidings.store.jsonread import Malformed, parse

DAEMON_DIR = ".notification/daemon"
CONTROL_FILE = f"{DAEMON_DIR}/.tombstone"


class DaemonControlError(TidingsError):
    """The control record exists but is not a valid record (C32)."""

    default_reason = "daemon_control_error"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class BatchState(_Strict):
    count: int = Field(default=0, ge=0)
    alarm_fired: bool = False


class Cleared(_Strict):
    raw_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    event_keys: list[str]


class Pending(_Strict):
    daemon_id: str
    event_id: str
    prior_batch_state: BatchState
    batch_state: BatchState


class Control(_Strict):
    version: int = Field(default=1, ge=1, le=1)  # strict int: ``true`` is no version
    epoch: int = Field(default=0, ge=0)
    cleared: dict[str, Cleared] = Field(default_factory=dict)
    batch_state: BatchState = Field(default_factory=BatchState)
    pending: Pending | None = None

    def entry_for(self, name: str, raw_sha: str) -> Cleared | None:
        """The cleared entry of mini-file ``name`` if it applies to these bytes."""
        entry = self.cleared.get(name)
        return entry if entry is not None and entry.raw_sha256 == raw_sha else None

    def with_changes(self, **changes: object) -> Control:
        """A validated copy with ``changes`` (models or plain values)."""
        return Control.model_validate({**dict(self), **changes})


def read_control(root: Path) -> Control:
    """The record; absent means epoch 0, nothing cleared, batch ``{0, false}``.

    Raises :class:`DaemonControlError` for anything present but invalid.
    """
    outcome = safe_read(root, CONTROL_FILE)
    if outcome.kind == "absent":
        return Control()
    if not outcome.ok:
        raise DaemonControlError(f"control record is unreadable ({outcome.error})")
    parsed = parse(outcome.data)
    if isinstance(parsed, Malformed):
        raise DaemonControlError(f"control record is invalid: {parsed.message}"[:240])
    try:
        return Control.model_validate(parsed.value)
    except ValidationError as exc:
        first = str(exc).splitlines()[0][:200]
        raise DaemonControlError(f"control record is invalid: {first}") from None


def write_control(root: Path, control: Control) -> None:
    """C17: compact with sorted keys, written atomically."""
    atomic_write(root, CONTROL_FILE, compact_sorted(control.model_dump()).encode("utf-8"))


def _canonical(value: object) -> bytes:
    # Events read from outside writers' files may hold NaN; hashing must not fail on them.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode(
        "utf-8"
    )


def event_key(event: object) -> str:
    """C31: ``event:<event_id>``, else ``idempotency:<key>``, else ``sha256:<hex>``."""
    if isinstance(event, dict):
        event_id = event.get("event_id")
        if isinstance(event_id, str):
            return f"event:{event_id}"
        key = event.get("idempotency_key")
        if isinstance(key, str):
            return f"idempotency:{key}"
    return "sha256:" + sha256_hex(_canonical(event))


def canonical_bytes(value: object) -> bytes:
    """Compact sorted-key JSON (the logical payload's bytes in the fingerprint, C32)."""
    return _canonical(value)


def apply_entry(events: list[object], entry: Cleared | None) -> list[object]:
    """The events left once ``entry``'s keys are removed, as a multiset, first match first."""
    if entry is None:
        return list(events)
    remaining = Counter(entry.event_keys)
    kept: list[object] = []
    for event in events:
        key = event_key(event)
        if remaining[key] > 0:
            remaining[key] -= 1
            continue
        kept.append(event)
    return kept
