"""Dismissal: ``dismiss_channel``, ``dismiss_event``, ``dismiss_ref`` (channels.md C35-C37).

Guards run in the order of C35; then, under the channel's lock (``daemon``: the
control lock), the current version is compared with the one the agent was last
delivered, so nothing the agent has not seen is ever cleared without ``force``.
A dismissal changes only the mirror file (C9) and moves both committed
fingerprints to the channel's new entry, so it never wakes the agent (C36).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Required, TypedDict

from tidings.jobs.channels import (
    CONTROL_SCOPE,
    DAEMON,
    SYSTEM,
    DaemonControlError,
    ErrorResult,
    allowlist,
    channel_file,
    check_channel,
    clear_all,
    failure,
    parse_mirror,
    raised,
    read_control,
    read_daemon,
    read_minis,
    refresh,
    remove_events,
    settle_intent,
    settle_pending,
    summarise,
    view_of,
)
from tidings.jobs.consumer import committed
from tidings.jobs.consumer.delay_state import live_target
from tidings.jobs.consumer.own_acts import own_act
from tidings.jobs.consumer.wake_mask import masked_fingerprint
from tidings.jobs.runtime import Runtime
from tidings.store import keys, locks, replies
from tidings.store.errors import LockTimeout, UnsafePathError
from tidings.store.files import ReadOutcome, atomic_write, remove_file, safe_read
from tidings.store.jsonfmt import compact, sha256_hex
from tidings.store.models import AgentRecord

#: A fingerprint entry ``[filename, byte_size, sha256]``, a read problem, or no file.
Version = list[object] | str | None
#: The field a targeted dismissal matches on.
Field = Literal["event_id", "ref_id"]


class Dismissed(TypedDict, total=False):
    """C36: what a dismissal did (``reason``: the ack text given, C35)."""

    status: Required[Literal["ok"]]
    channel: Required[str]
    cleared: Required[bool]
    removed: int
    remaining: int
    forced: Required[bool]
    cause: Literal["already_empty", "no_matching_event"]
    reason: str
    event_id: str
    ref_id: str


class Stale(TypedDict):
    """C35 step 6: the channel changed since it was delivered (nothing was cleared)."""

    status: Literal["error"]
    reason: Literal["stale_channel_version"]
    channel: str
    forced: bool
    delivered_version: Version
    current_version: Version
    message: str


DismissResult = Dismissed | Stale | ErrorResult

#: C37: the guard that applies to ``email`` while no other guard is set for it.
DEFAULT_GUARDS = {
    "email": "email(action='dismiss', input={'email_id': [...]}) or "
    "email(action='read', input={'email_id': [...]})",
}
PROTECTED = frozenset({"goal"})
ACK_REQUIRED = frozenset({"post-molt"})
EVENT_CHANNELS = frozenset({SYSTEM, DAEMON})


def guard_for(rt: Runtime, channel: str) -> str | None:
    """C37: the suggested verb guarding ``channel``, if any (hub-wide, last set wins)."""
    raw = rt.control.hget(keys.DISMISS_GUARDS, channel)
    if raw is not None:
        return replies.text(raw)
    return DEFAULT_GUARDS.get(channel)


def _pre_checks(
    rt: Runtime,
    agent: AgentRecord,
    channel: object,
    *,
    force: bool,
    reason: object,
    targeted: bool,
) -> ErrorResult | None:
    """C35 steps 1-5."""
    problem = check_channel(rt, agent, channel)
    if problem is not None or not isinstance(channel, str):
        return problem or failure("invalid_channel", "channel must be a string", channel=channel)
    if channel in ACK_REQUIRED and (not isinstance(reason, str) or not reason.strip()):
        return failure(
            "missing_ack_reason", f"dismissing {channel} needs a reason (the ack)", channel=channel
        )
    if channel in PROTECTED:
        return failure("protected_channel", f"{channel} cannot be dismissed", channel=channel)
    if targeted and channel not in EVENT_CHANNELS:
        return failure(
            "atomic_dismiss_requires_system_channel",
            "event and ref dismissal work on the system and daemon channels only",
            channel=channel,
        )
    verb = guard_for(rt, channel)
    if verb is not None and not force:
        return failure(
            "guarded",
            f"{channel} is guarded; use {verb}, or force=true",
            channel=channel,
            suggested_verb=verb,
        )
    return None


def _stale(channel: str, delivered: Version, current: Version) -> Stale:
    return {
        "status": "error",
        "reason": "stale_channel_version",
        "channel": channel,
        "forced": False,
        "delivered_version": delivered,
        "current_version": current,
        "message": f"{channel} changed since it was last delivered; read it again "
        "(notification check) or pass force=true",
    }


def _entry_of(filename: str, outcome_data: bytes) -> list[object]:
    return [filename, len(outcome_data), sha256_hex(outcome_data)]


class _Target:
    """What a locked dismissal needs to know about the agent's view."""

    def __init__(self, rt: Runtime, agent: AgentRecord, channel: str) -> None:
        self.rt, self.agent, self.channel = rt, agent, channel
        self.filename = f"{channel}.json"
        self.delayed = live_target(rt, agent, allowlist(rt, agent))

    def delivered(self) -> Version:
        return committed.read(self.rt, self.agent).delivered_entry(self.filename)

    def commit(self, raw_entry: list[object] | None) -> None:
        """C36: both committed fingerprints take the new entry (or lose it)."""
        root = self.agent.root
        if self.channel == DAEMON:
            wake = next(
                (
                    e
                    for e in masked_fingerprint(
                        root, [raw_entry] if raw_entry else [], self.delayed
                    )
                    if e[0] == self.filename
                ),
                None,
            )
        elif self.channel == self.delayed:
            raw_entry = wake = None  # a delayed target is in neither fingerprint (D1)
        else:
            wake = raw_entry
        committed.patch(self.rt, self.agent, self.filename, raw_entry, wake, self.delayed)


def _read_checked(target: _Target, force: bool) -> tuple[ReadOutcome, Stale | None]:
    """C35 step 6: settle a crashed flush, read the file, compare with the delivered
    version; the second value is the ``stale_channel_version`` error, if any."""
    channel = target.channel
    settle_intent(target.rt, target.agent, channel)
    outcome = safe_read(target.agent.root, channel_file(channel))
    current: Version = (
        None
        if outcome.kind == "absent"
        else _entry_of(target.filename, outcome.data)
        if outcome.ok
        else outcome.error
    )
    delivered = target.delivered()
    if not force and delivered != current:
        return outcome, _stale(channel, delivered, current)
    return outcome, None


def _whole_file(target: _Target, force: bool) -> Dismissed | Stale:
    root, channel = target.agent.root, target.channel
    outcome, stale = _read_checked(target, force)
    if stale is not None:
        return stale
    existed = outcome.kind != "absent" and remove_file(root, channel_file(channel))
    target.commit(None)
    result: Dismissed = {"status": "ok", "channel": channel, "cleared": existed, "forced": force}
    if not existed:
        result["cause"] = "already_empty"
    return result


def _events_in_file(target: _Target, force: bool, match: Callable[[object], bool]) -> DismissResult:
    root, channel = target.agent.root, target.channel
    outcome, stale = _read_checked(target, force)
    if stale is not None:
        return stale
    if outcome.kind not in ("absent", "ok"):
        return failure(
            "clear_failed",
            f"{channel_file(channel)} cannot be read ({outcome.error})",
            channel=channel,
        )
    mirror = parse_mirror(outcome.data if outcome.ok else None)
    data = mirror.get("data")
    events = data.get("events") if isinstance(data, dict) else None
    events = events if isinstance(events, list) else []
    kept = [event for event in events if not match(event)]
    removed = len(events) - len(kept)
    if removed:
        if kept and isinstance(data, dict):  # events were found, so data is an object
            data["events"] = kept
            summarise(mirror, channel)
            encoded = compact(mirror).encode("utf-8")
            atomic_write(root, channel_file(channel), encoded)
            target.commit(_entry_of(target.filename, encoded))
        else:
            remove_file(root, channel_file(channel))
            target.commit(None)
    return {
        "status": "ok",
        "channel": channel,
        "cleared": removed > 0,
        "removed": removed,
        "remaining": len(kept),
        "forced": force,
    }


def _daemon(
    target: _Target, force: bool, match: Callable[[object], bool] | None
) -> Dismissed | Stale:
    root = target.agent.root
    control = settle_pending(root, read_control(root))
    view = view_of(control, read_minis(root, control))
    current: Version = list(view.fp_entry) if view.fp_entry else None
    delivered = target.delivered()
    if not force and delivered != current:
        return _stale(DAEMON, delivered, current)
    existed = view.payload is not None
    removed = 0
    if match is None:
        if existed:
            clear_all(root, control, view)
    else:
        removed = remove_events(root, control, view, match)
    after = read_daemon(root)
    target.commit(list(after.fp_entry) if after.fp_entry else None)
    refresh(root, after)
    if match is None:
        result: Dismissed = {"status": "ok", "channel": DAEMON, "cleared": existed, "forced": force}
        if not existed:
            result["cause"] = "already_empty"
        return result
    return {
        "status": "ok",
        "channel": DAEMON,
        "cleared": removed > 0,
        "removed": removed,
        "remaining": after.event_count,
        "forced": force,
    }


def _locked(
    rt: Runtime,
    agent: AgentRecord,
    channel: str,
    force: bool,
    match: Callable[[object], bool] | None,
) -> DismissResult:
    """C35 step 6 and the change itself."""
    target = _Target(rt, agent, channel)
    scope = CONTROL_SCOPE if channel == DAEMON else f"channel:{channel}"
    try:
        with own_act(rt, agent), locks.hold(agent.root, scope):  # C53: never wakes
            if channel == DAEMON:
                return _daemon(target, force, match)
            if match is None:
                return _whole_file(target, force)
            return _events_in_file(target, force, match)
    except (DaemonControlError, LockTimeout) as exc:
        return raised(exc, channel=channel)
    except (OSError, UnsafePathError) as exc:
        return failure(
            "clear_failed",
            f"could not clear {channel}: {type(exc).__name__}: {exc}",
            channel=channel,
        )


def _flag(force: object) -> bool:
    return force is True


def dismiss_channel(
    rt: Runtime,
    agent: AgentRecord,
    channel: object,
    *,
    force: object = None,
    reason: object = None,
    event_id: object = None,
    ref_id: object = None,
) -> DismissResult:
    """Clear a whole channel (C36)."""
    if event_id is not None or ref_id is not None:
        return failure(
            "channel_dismiss_rejects_event_target",
            "dismiss_channel clears a whole channel; use dismiss_event or dismiss_ref",
        )
    if channel is None:
        return failure("missing_channel", "dismiss_channel needs a channel")
    problem = _pre_checks(rt, agent, channel, force=_flag(force), reason=reason, targeted=False)
    if problem is not None or not isinstance(channel, str):
        return problem or failure("invalid_channel", "channel must be a string", channel=channel)
    result = _locked(rt, agent, channel, _flag(force), None)
    if result["status"] == "ok" and isinstance(reason, str):
        result["reason"] = reason
    return result


def _targeted(
    rt: Runtime,
    agent: AgentRecord,
    field: Field,
    value: object,
    channel: object,
    force: object,
    reason: object,
) -> DismissResult:
    if not isinstance(value, str) or not value:
        return failure(
            "missing_event_id" if field == "event_id" else "missing_ref_id",
            f"{field} must be a non-empty string",
        )
    channel = SYSTEM if channel is None else channel
    problem = _pre_checks(rt, agent, channel, force=_flag(force), reason=reason, targeted=True)
    if problem is not None or not isinstance(channel, str):
        return problem or failure("invalid_channel", "channel must be a string", channel=channel)

    def match(event: object) -> bool:
        return isinstance(event, dict) and event.get(field) == value

    result = _locked(rt, agent, channel, _flag(force), match)
    if result["status"] == "ok":
        result[field] = value
        if not result.get("removed"):
            result["cause"] = "no_matching_event"
    return result


def dismiss_event(
    rt: Runtime,
    agent: AgentRecord,
    event_id: object,
    *,
    channel: object = None,
    force: object = None,
    reason: object = None,
) -> DismissResult:
    """Remove every event with ``event_id`` from ``system`` (default) or ``daemon`` (C36)."""
    return _targeted(rt, agent, "event_id", event_id, channel, force, reason)


def dismiss_ref(
    rt: Runtime,
    agent: AgentRecord,
    ref_id: object,
    *,
    channel: object = None,
    force: object = None,
    reason: object = None,
) -> DismissResult:
    """Remove every event with ``ref_id`` from ``system`` (default) or ``daemon`` (C36)."""
    return _targeted(rt, agent, "ref_id", ref_id, channel, force, reason)
