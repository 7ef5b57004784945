"""Reading the daemon aggregate (channels.md C32, C33): mini-files seen as one channel.

Mini-files are read in filename order with the control record's cleared entries
applied (see :mod:`tidings.jobs.channels.daemon_control`); logically empty ones drop out; the
first one left is the template of the ``daemon`` payload.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from tidings.jobs.channels import names
from tidings.jobs.channels.daemon_control import (
    DAEMON_DIR,
    BatchState,
    Control,
    DaemonControlError,
    apply_entry,
    canonical_bytes,
    read_control,
)
from tidings.store.files import MAX_READ_BYTES, list_dir, safe_read
from tidings.store.jsonfmt import sha256_hex
from tidings.store.jsonread import loads_or

#: C33: the workdir file holding ``channels.daemon.alarm_threshold``.
NOTIFICATION_SETTINGS_FILE = "notification.json"


class BatchView(TypedDict):
    """C31: the batch state as readers show it (``data.daemon`` of the payload)."""

    count: int
    alarm_fired: bool


def batch_view(state: BatchState) -> BatchView:
    return {"count": state.count, "alarm_fired": state.alarm_fired}


#: C32: what readers show while the control record is bad.
CONTROL_ERROR_PAYLOAD: dict[str, object] = {
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


def mini_file(name: str) -> str:
    return f"{DAEMON_DIR}/{name}"


def header(n: int) -> str:
    return f"{n} daemon notification(s)"


@dataclass(frozen=True)
class MiniFile:
    """One valid mini-file: its raw bytes and events before and after its cleared entry."""

    name: str
    raw: bytes
    #: The mini-file's object as its writer left it (open JSON; ``data`` is an object).
    envelope: dict[str, object]
    events: list[object]
    logical: list[object]
    entry_applies: bool

    @property
    def sha(self) -> str:
        return sha256_hex(self.raw)

    @property
    def daemon_id(self) -> str:
        return self.name[:-5]

    def logical_envelope(self) -> dict[str, object]:
        """The envelope with the cleared events removed, header and priority recomputed."""
        envelope = copy.deepcopy(self.envelope)
        envelope["header"] = header(len(self.logical))
        envelope["priority"] = "high" if any(map(is_high, self.logical)) else "normal"
        data = envelope["data"]
        if isinstance(data, dict):  # always: parse_mini admits no other
            data["events"] = copy.deepcopy(self.logical)
        return envelope

    def fp_bytes(self) -> bytes:
        """C32: raw bytes, or the logical payload's canonical JSON when an entry applies."""
        return canonical_bytes(self.logical_envelope()) if self.entry_applies else self.raw


@dataclass(frozen=True)
class DaemonView:
    """What readers see of ``.notification/daemon/``."""

    payload: dict[str, object] | None = None
    fp_entry: tuple[str, int, str] | None = None
    batch_state: BatchView = field(default_factory=lambda: batch_view(BatchState()))
    minis: tuple[MiniFile, ...] = ()
    error: str | None = None

    @property
    def logical(self) -> tuple[MiniFile, ...]:
        return tuple(m for m in self.minis if m.logical)

    @property
    def event_count(self) -> int:
        return sum(len(m.logical) for m in self.minis)


def is_high(event: object) -> bool:
    return isinstance(event, dict) and "high" in (event.get("severity"), event.get("priority"))


def parse_mini(name: str, raw: bytes, control: Control) -> MiniFile | None:
    """A mini-file is valid when it is an object whose ``data.events`` is a list."""
    value = loads_or(raw, None)
    if not isinstance(value, dict):
        return None
    data = value.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        return None
    entry = control.entry_for(name, sha256_hex(raw))
    events: list[object] = data["events"]
    return MiniFile(name, raw, value, events, apply_entry(events, entry), entry is not None)


def is_mini_name(name: str) -> bool:
    return name.endswith(".json") and names.name_error(name[:-5]) is None


def read_minis(root: Path, control: Control) -> tuple[MiniFile, ...]:
    entries = list_dir(root, DAEMON_DIR) or []
    minis: list[MiniFile] = []
    for entry in sorted(entries, key=lambda e: e.name):
        if not (
            is_mini_name(entry.name) and entry.is_regular and entry.stat.st_size <= MAX_READ_BYTES
        ):
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
    batch = batch_view(effective_batch_state(control, minis))
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
    value: object = loads_or(outcome.data, None)
    for key in ("channels", "daemon", "alarm_threshold"):
        value = value.get(key) if isinstance(value, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None
