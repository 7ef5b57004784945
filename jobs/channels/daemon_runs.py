"""The daemon aggregate (channels.md C30-C34): per-run mini-files seen as one channel.

Every daemon run appends to its own ``.notification/daemon/<daemon_id>.json``
(this module, C30); readers see one logical ``daemon`` channel
(:mod:`tidings.jobs.channels.daemon_view`, C32); dismissals go through the control record
(:mod:`tidings.jobs.channels.daemon_control`, :mod:`tidings.jobs.channels.daemon_dismissal`, C31).
"""

from __future__ import annotations

from pathlib import Path

from tidings.jobs import log
from tidings.jobs.channels import daemon_report, names
from tidings.jobs.channels.daemon_control import (
    BatchState,
    Control,
    DaemonControlError,
    Pending,
    event_key,
    read_control,
    write_control,
)
from tidings.jobs.channels.daemon_view import (
    CONTROL_ERROR_PAYLOAD,
    DaemonView,
    MiniFile,
    alarm_threshold,
    effective_batch_state,
    header,
    is_high,
    mini_file,
    parse_mini,
    read_daemon,
    read_minis,
    view_of,
)
from tidings.jobs.channels.envelope import (
    DEFAULT_ICON,
    MAX_ENVELOPE_BYTES,
    PublishResult,
    check_event,
    complete_event,
    failure,
    raised,
)
from tidings.jobs.runtime import Runtime
from tidings.store import locks
from tidings.store.errors import LockTimeout, UnsafePathError
from tidings.store.files import atomic_write, is_symlink, safe_read
from tidings.store.jsonfmt import compact, utc_stamp
from tidings.store.models import AgentRecord

__all__ = [
    "CONTROL_ERROR_PAYLOAD",
    "CONTROL_SCOPE",
    "DaemonView",
    "MiniFile",
    "alarm_threshold",
    "publish_daemon_event",
    "read_daemon",
    "read_minis",
    "settle_pending",
    "view_of",
]

#: Lock scope every daemon mutation holds (C30, C31).
CONTROL_SCOPE = "resource:daemon-control"


def run_scope(daemon_id: str) -> str:
    return f"daemon-run:{daemon_id}"


def settle_pending(root: Path, control: Control) -> Control:
    """C30: resolve a crashed append's receipt into the batch state. Hold the control lock."""
    if control.pending is None:
        return control
    settled = control.with_changes(
        batch_state=effective_batch_state(control, read_minis(root, control)), pending=None
    )
    write_control(root, settled)
    return settled


def _duplicate_of(caller_event: dict[str, object], logical: list[object]) -> str | None:
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
    existing: MiniFile | None,
    daemon_id: str,
    event: dict[str, object],
    priority: str | None,
    batch: BatchState,
    now: float,
) -> dict[str, object]:
    base = existing.logical_envelope() if existing is not None else {}
    events = [*(existing.logical if existing is not None else []), event]
    icon = base.get("icon")
    envelope: dict[str, object] = {
        "header": header(len(events)),
        "icon": icon if isinstance(icon, str) else DEFAULT_ICON,
        "priority": "high"
        if priority == "high" or base.get("priority") == "high" or any(map(is_high, events))
        else "normal",
        "published_at": utc_stamp(now),
        "daemon_id": daemon_id,
    }
    extras = {k: v for k, v in base.items() if k not in envelope and k != "data"}
    return {
        **envelope,
        **extras,
        "data": {"daemon_id": daemon_id, "events": events, "daemon": batch.model_dump()},
    }


def _append_locked(
    rt: Runtime, agent: AgentRecord, daemon_id: str, event: dict[str, object], priority: str | None
) -> PublishResult:
    root = agent.root
    control = settle_pending(root, read_control(root))
    name = f"{daemon_id}.json"
    outcome = safe_read(root, mini_file(name))
    if outcome.kind == "not_regular":
        return failure(
            "unsafe_path", f"{mini_file(name)} is not a regular file", daemon_id=daemon_id
        )
    if outcome.kind == "too_large":
        return failure("daemon_run_full", f"{mini_file(name)} is over 1 MiB", daemon_id=daemon_id)
    existing = parse_mini(name, outcome.data, control) if outcome.ok else None
    duplicate = _duplicate_of(event, existing.logical if existing is not None else [])
    if duplicate is not None:
        return {"status": "ok", "event_id": duplicate, "duplicate": True}
    now = rt.clock.now()
    completed = complete_event(event, None, now)
    batch = _next_batch(control.batch_state, alarm_threshold(root))
    appended = _appended(existing, daemon_id, completed.event, priority, batch, now)
    encoded = compact(appended).encode()
    if len(encoded) > MAX_ENVELOPE_BYTES:
        return failure(
            "daemon_run_full", f"{mini_file(name)} would exceed 1 MiB", daemon_id=daemon_id
        )
    pending = Pending(
        daemon_id=daemon_id,
        event_id=completed.event_id,
        prior_batch_state=control.batch_state,
        batch_state=batch,
    )
    write_control(root, control.with_changes(pending=pending))
    atomic_write(root, mini_file(name), encoded)
    # The applied entry (if any) no longer matches the new bytes: drop it with the receipt.
    cleared = {k: v for k, v in control.cleared.items() if k != name}
    write_control(root, control.with_changes(batch_state=batch, pending=None, cleared=cleared))
    return {"status": "ok", "event_id": completed.event_id, "flushed": True}


def publish_daemon_event(
    rt: Runtime,
    agent: AgentRecord,
    daemon_id: object,
    event: object,
    *,
    priority: str | None = None,
    wait: bool = False,
) -> PublishResult:
    """C30: append ``event`` to the run's mini-file.

    Runs in the caller under ``daemon-run:<id>`` + ``resource:daemon-control``,
    so the result is final (``flushed: true``) whatever ``wait`` says.
    """
    problem = names.name_error(daemon_id, "daemon_id")
    if problem is not None or not isinstance(daemon_id, str):
        return failure(
            "invalid_daemon_id", problem or "daemon_id must be a string", daemon_id=daemon_id
        )
    invalid = check_event(event, priority, None)
    if invalid is not None or not isinstance(event, dict):
        return invalid or failure("invalid_event", "event must be a JSON object")
    if is_symlink(agent.root, mini_file(f"{daemon_id}.json")):
        return failure(
            "unsafe_path", ".notification/daemon or the mini-file is a symlink", daemon_id=daemon_id
        )
    try:
        with locks.hold(agent.root, run_scope(daemon_id), CONTROL_SCOPE):
            result = _append_locked(rt, agent, daemon_id, event, priority)
            if result["status"] == "ok" and not result.get("duplicate"):
                daemon_report.refresh(agent.root, read_daemon(agent.root))
    except DaemonControlError as exc:
        return raised(exc)
    except (LockTimeout, UnsafePathError) as exc:
        return raised(exc, daemon_id=daemon_id)
    except OSError as exc:
        log.event("daemon_append_failed", agent_id=agent.agent_id, error=type(exc).__name__)
        return failure(
            "daemon_write_failed", f"could not write the daemon event: {exc}", daemon_id=daemon_id
        )
    return result
