"""The daemon aggregate (channels.md C30, C32, C33): per-run mini-files seen as one channel.

Every daemon run appends to its own ``.notification/daemon/<daemon_id>.json``;
readers see one logical ``daemon`` channel built from the mini-files in filename
order with the control record's cleared entries applied (see
:mod:`jobs.daemon_control`).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs import daemon_report, log, names
from jobs.daemon_control import (
    DAEMON_DIR,
    BatchState,
    Control,
    DaemonControlError,
    Pending,
    apply_entry,
    canonical_bytes,
    event_key,
    read_control,
    write_control,
)
from jobs.envelope import DEFAULT_ICON, MAX_ENVELOPE_BYTES, check_event, complete_event, error
from jobs.runtime import Runtime
from store import locks
from store.errors import LockTimeout, UnsafePathError
from store.files import MAX_READ_BYTES, atomic_write, is_symlink, list_dir, safe_read
from store.jsonfmt import compact, sha256_hex, utc_stamp
from store.models import AgentRecord

#: C33: the workdir file holding ``channels.daemon.alarm_threshold``.
NOTIFICATION_SETTINGS_FILE = "notification.json"
#: Lock scope every daemon mutation holds (C30, C31).
CONTROL_SCOPE = "resource:daemon-control"

Result = dict[str, Any]

#: C32: what readers show while the control record is bad.
CONTROL_ERROR_PAYLOAD: dict[str, Any] = {
    "header": "Daemon notification control error; repair .notification/daemon/.tombstone",
    "icon": "⚠️",
    "priority": "high",
    "data": {
        "events": [],
        "daemon": {"count": 0, "alarm_fired": True},
        "error": {
            "code": "daemon_control_error",
            "action": "repair .notification/daemon/.tombstone",
        },
    },
}


def run_scope(daemon_id: str) -> str:
    return f"daemon-run:{daemon_id}"


def mini_file(name: str) -> str:
    return f"{DAEMON_DIR}/{name}"


def header(n: int) -> str:
    return f"{n} daemon notification(s)"


@dataclass(frozen=True)
class MiniFile:
    """One valid mini-file: its raw bytes and events before and after its cleared entry."""

    name: str
    raw: bytes
    envelope: dict[str, Any]
    events: list[Any]
    logical: list[Any]
    entry_applies: bool

    @property
    def sha(self) -> str:
        return sha256_hex(self.raw)

    @property
    def daemon_id(self) -> str:
        return self.name[:-5]

    def logical_envelope(self) -> dict[str, Any]:
        """The envelope with the cleared events removed, header and priority recomputed."""
        envelope: dict[str, Any] = copy.deepcopy(self.envelope)
        envelope["header"] = header(len(self.logical))
        envelope["priority"] = "high" if any(map(_is_high, self.logical)) else "normal"
        envelope["data"]["events"] = copy.deepcopy(self.logical)
        return envelope

    def fp_bytes(self) -> bytes:
        """C32: raw bytes, or the logical payload's canonical JSON when an entry applies."""
        return canonical_bytes(self.logical_envelope()) if self.entry_applies else self.raw


@dataclass(frozen=True)
class DaemonView:
    """What readers see of ``.notification/daemon/``."""

    payload: dict[str, Any] | None = None
    fp_entry: tuple[str, int, str] | None = None
    batch_state: dict[str, Any] = field(default_factory=lambda: {"count": 0, "alarm_fired": False})
    minis: tuple[MiniFile, ...] = ()
    error: str | None = None

    @property
    def logical(self) -> tuple[MiniFile, ...]:
        return tuple(m for m in self.minis if m.logical)

    @property
    def event_count(self) -> int:
        return sum(len(m.logical) for m in self.minis)


def _is_high(event: Any) -> bool:
    return isinstance(event, dict) and "high" in (event.get("severity"), event.get("priority"))


def parse_mini(name: str, raw: bytes, control: Control) -> MiniFile | None:
    """A mini-file is valid when it is an object whose ``data.events`` is a list."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(value, dict):
        return None
    data = value.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        return None
    entry = control.entry_for(name, sha256_hex(raw))
    events = data["events"]
    return MiniFile(name, raw, value, events, apply_entry(events, entry), entry is not None)


def is_mini_name(name: str) -> bool:
    return name.endswith(".json") and names.name_error(name[:-5]) is None


def read_minis(root: Path, control: Control) -> tuple[MiniFile, ...]:
    entries = list_dir(root, DAEMON_DIR) or []
    minis: list[MiniFile] = []
    for entry in sorted(entries, key=lambda e: e.name):
        if not (is_mini_name(entry.name) and entry.is_regular
                and entry.stat.st_size <= MAX_READ_BYTES):
            continue
        outcome = safe_read(root, mini_file(entry.name))
        if outcome.ok:
            mini = parse_mini(entry.name, outcome.data, control)
            if mini is not None:
                minis.append(mini)
    return tuple(minis)


def effective_batch_state(control: Control, minis: tuple[MiniFile, ...]) -> BatchState:
    """C31: the pending receipt's state once its event is in its mini-file."""
    pending = control.pending
    if pending is not None:
        for mini in minis:
            if mini.daemon_id == pending.daemon_id and any(
                isinstance(e, dict) and e.get("event_id") == pending.event_id for e in mini.events
            ):
                return pending.batch_state
    return control.batch_state


def _fp_entry(chunks: list[bytes]) -> tuple[str, int, str]:
    joined = b"".join(chunks)
    return ("daemon.json", len(joined), sha256_hex(joined))


def _error_view(root: Path, message: str) -> DaemonView:
    outcome = safe_read(root, f"{DAEMON_DIR}/.tombstone")
    marker = outcome.data if outcome.ok else (outcome.error or outcome.kind).encode()
    payload = copy.deepcopy(CONTROL_ERROR_PAYLOAD)
    return DaemonView(
        payload=payload,
        fp_entry=_fp_entry([b"control-error\0", canonical_bytes(payload), b"\0", marker]),
        batch_state={"count": 0, "alarm_fired": True},
        error=message,
    )


def view_of(control: Control, minis: tuple[MiniFile, ...]) -> DaemonView:
    batch = effective_batch_state(control, minis).model_dump()
    logical = [m for m in minis if m.logical]
    if not logical:
        return DaemonView(batch_state=batch, minis=minis)
    events = [event for m in logical for event in m.logical]
    payload = copy.deepcopy(logical[0].envelope)
    payload["header"] = header(len(events))
    payload["data"] = {"events": copy.deepcopy(events), "daemon": batch}
    chunks: list[bytes] = []
    for mini in logical:
        body = mini.fp_bytes()
        chunks += [f"mini/{mini.name}".encode(), b"\0", str(len(body)).encode(), b"\0", body]
    return DaemonView(payload, _fp_entry(chunks), batch, minis)


def read_daemon(root: Path) -> DaemonView:
    """C32: the logical ``daemon`` channel (payload ``None`` when there is none)."""
    try:
        control = read_control(root)
    except DaemonControlError as exc:
        return _error_view(root, exc.message)
    return view_of(control, read_minis(root, control))


def alarm_threshold(root: Path) -> int | None:
    """C33: ``channels.daemon.alarm_threshold`` of ``notification.json`` if valid."""
    outcome = safe_read(root, NOTIFICATION_SETTINGS_FILE)
    if not outcome.ok:
        return None
    try:
        value: Any = json.loads(outcome.data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    for key in ("channels", "daemon", "alarm_threshold"):
        value = value.get(key) if isinstance(value, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def settle_pending(root: Path, control: Control) -> Control:
    """C30: resolve a crashed append's receipt into the batch state. Hold the control lock."""
    if control.pending is None:
        return control
    settled = control.with_changes(
        batch_state=effective_batch_state(control, read_minis(root, control)), pending=None
    )
    write_control(root, settled)
    return settled


def _duplicate_of(caller_event: dict[str, Any], logical: list[Any]) -> str | None:
    """C30: the stored event with the caller's event key, if present."""
    key = event_key(caller_event)
    if key.startswith("sha256:"):
        return None  # stored events always carry an event_id: content alone never matches
    for event in logical:
        if not isinstance(event, dict):
            continue
        idem = event.get("idempotency_key")
        if key == event_key(event) or (isinstance(idem, str) and key == f"idempotency:{idem}"):
            found = event.get("event_id")
            return found if isinstance(found, str) else ""
    return None


def _next_batch(current: BatchState, threshold: int | None) -> BatchState:
    count = current.count + 1
    fired = current.alarm_fired or (threshold is not None and count > threshold)
    return BatchState(count=count, alarm_fired=fired)


def _appended(
    existing: MiniFile | None, daemon_id: str, event: dict[str, Any], priority: str | None,
    batch: BatchState, now: float,
) -> dict[str, Any]:
    base = existing.logical_envelope() if existing is not None else {}
    events = [*(existing.logical if existing is not None else []), event]
    envelope: dict[str, Any] = {
        "header": header(len(events)),
        "icon": base.get("icon") if isinstance(base.get("icon"), str) else DEFAULT_ICON,
        "priority": "high" if priority == "high" or base.get("priority") == "high"
        or any(map(_is_high, events)) else "normal",
        "published_at": utc_stamp(now),
        "daemon_id": daemon_id,
    }
    extras = {k: v for k, v in base.items() if k not in envelope and k != "data"}
    return {**envelope, **extras,
            "data": {"daemon_id": daemon_id, "events": events, "daemon": batch.model_dump()}}


def _append_locked(
    rt: Runtime, agent: AgentRecord, daemon_id: str, event: dict[str, Any], priority: str | None
) -> Result:
    root = agent.root
    control = settle_pending(root, read_control(root))
    name = f"{daemon_id}.json"
    outcome = safe_read(root, mini_file(name))
    if outcome.kind == "not_regular":
        return error("unsafe_path", f"{mini_file(name)} is not a regular file",
                     daemon_id=daemon_id)
    if outcome.kind == "too_large":
        return error("daemon_run_full", f"{mini_file(name)} is over 1 MiB", daemon_id=daemon_id)
    existing = parse_mini(name, outcome.data, control) if outcome.ok else None
    duplicate = _duplicate_of(event, existing.logical if existing is not None else [])
    if duplicate is not None:
        return {"status": "ok", "event_id": duplicate, "duplicate": True}
    now = rt.clock.now()
    completed, _ = complete_event(event, None, now)
    batch = _next_batch(control.batch_state, alarm_threshold(root))
    encoded = compact(_appended(existing, daemon_id, completed, priority, batch, now)).encode()
    if len(encoded) > MAX_ENVELOPE_BYTES:
        return error("daemon_run_full", f"{mini_file(name)} would exceed 1 MiB",
                     daemon_id=daemon_id)
    pending = Pending(daemon_id=daemon_id, event_id=completed["event_id"],
                      prior_batch_state=control.batch_state, batch_state=batch)
    write_control(root, control.with_changes(pending=pending))
    atomic_write(root, mini_file(name), encoded)
    # The applied entry (if any) no longer matches the new bytes: drop it with the receipt.
    cleared = {k: v for k, v in control.cleared.items() if k != name}
    write_control(root, control.with_changes(batch_state=batch, pending=None, cleared=cleared))
    return {"status": "ok", "event_id": completed["event_id"], "flushed": True}


def publish_daemon_event(
    rt: Runtime,
    agent: AgentRecord,
    daemon_id: object,
    event: object,
    *,
    priority: str | None = None,
    wait: bool = False,
) -> Result:
    """C30: append ``event`` to the run's mini-file.

    Runs in the caller under ``daemon-run:<id>`` + ``resource:daemon-control``,
    so the result is final (``flushed: true``) whatever ``wait`` says.
    """
    problem = names.name_error(daemon_id, "daemon_id")
    if problem is not None:
        return error("invalid_daemon_id", problem, daemon_id=daemon_id)
    assert isinstance(daemon_id, str)
    invalid = check_event(event, priority, None)
    if invalid is not None:
        return invalid
    assert isinstance(event, dict)
    if is_symlink(agent.root, mini_file(f"{daemon_id}.json")):
        return error("unsafe_path", ".notification/daemon or the mini-file is a symlink",
                     daemon_id=daemon_id)
    try:
        with locks.hold(agent.root, run_scope(daemon_id), CONTROL_SCOPE):
            result = _append_locked(rt, agent, daemon_id, event, priority)
            if result.get("status") == "ok" and not result.get("duplicate"):
                daemon_report.refresh(agent.root, read_daemon(agent.root))
    except DaemonControlError as exc:
        return exc.as_result()
    except (LockTimeout, UnsafePathError) as exc:
        return exc.as_result(daemon_id=daemon_id)
    except OSError as exc:
        log.event("daemon_append_failed", agent_id=agent.agent_id, error=type(exc).__name__)
        return error("daemon_write_failed", f"could not write the daemon event: {exc}",
                     daemon_id=daemon_id)
    return result
