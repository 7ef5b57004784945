"""Delivering notifications to the model: stamp and render (channels.md C23, C24).

A delivery hands over one stable coherent read and commits, in Redis, both the
*delivered* raw fingerprint (what the agent has seen, the base of dismissal's
compare-and-swap) and the *wake* masked fingerprint (so the sync tick does not
wake the agent for what it already has).
"""

from __future__ import annotations

import copy
from typing import TypedDict

from tidings.jobs.cap import (
    Block,
    Lane,
    Spiller,
    Unserialisable,
    cap_attention,
    cap_lane,
    cap_persistent,
    ruler_text,
    sanitise_attention,
)
from tidings.jobs.channels import DAEMON
from tidings.jobs.consumer.coherent import observe
from tidings.jobs.consumer.read import FpEntry, Observation
from tidings.jobs.limits import max_chars
from tidings.jobs.runtime import Runtime
from tidings.store.jsonfmt import compact
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord

#: A tool result: the caller's JSON object, stamped under ``_meta`` (C24).
ToolResult = dict[str, object]


class Notifications(TypedDict, total=False):
    """C24: the ``notifications`` object; a lane is absent when it holds nothing."""

    attention: Lane
    persistent: Block


class Transient(TypedDict, total=False):
    """C24: the transient guidance; empty when the attention lane is."""

    ref: str
    sources: list[str]


class Guidance(TypedDict):
    transient: Transient


class Unavailable(TypedDict):
    """C24: why the notifications could not be read, in words the model can act on."""

    reason: str
    message: str


class UnavailableMeta(TypedDict):
    """C24: what a check placeholder carries when no stable read could be made."""

    notifications_unavailable: Unavailable


class AgentMeta(TypedDict):
    """C24: what a stamp puts under ``_meta.agent_meta``."""

    notifications: Notifications
    guidance: Guidance
    instruction: str


#: C45: the exact result of ``notification(action="check")``.
CHECK_PLACEHOLDER: ToolResult = {
    "_notification_placeholder": True,
    "message": (
        "Voluntary notification(action=check) read. The live notification payload is "
        "delivered under _meta.agent_meta.notifications.attention and "
        "_meta.agent_meta.guidance.transient on this same result. If those keys are absent, "
        "no notifications are active."
    ),
}

#: C24: the sentence a check placeholder carries when the read failed or stayed unstable.
UNAVAILABLE_MESSAGE = (
    "The notifications could not be read just now ({why}); this does not mean that none "
    'are active. Call notification(action="check") again later.'
)
#: C24: the words of :data:`UNAVAILABLE_MESSAGE` for each reason (``store_error`` else).
UNAVAILABLE_WHY = {
    "unstable": "the notification files kept changing during the read",
    "no_permission": "the store refused this process's user a command the read needs",
    "auth_failed": "the store refused this process's credentials",
    "internal_error": "the read failed unexpectedly",
}

#: C24: the instruction every stamp carries.
STAMP_INSTRUCTION = "Only the latest agent_meta is current; older copies are historical traces."
GUIDANCE_REF = "meta_guidance.notification_handling"


def check_placeholder() -> ToolResult:
    return copy.deepcopy(CHECK_PLACEHOLDER)


def is_placeholder(result: object) -> bool:
    return isinstance(result, dict) and result.get("_notification_placeholder") is True


def commit(
    rt: Runtime, agent: AgentRecord, raw_fp: list[FpEntry], masked_fp: list[FpEntry]
) -> None:
    """C23: record what was delivered, in one atomic command."""
    k = AgentKeys(agent.agent_id)
    rt.redis.mset({k.delivered_fp: compact(raw_fp), k.wake_fp: compact(masked_fp)})


def _without_guidance(payload: object) -> object:
    if isinstance(payload, dict) and "notification_guidance" in payload:
        return {k: v for k, v in payload.items() if k != "notification_guidance"}
    return payload


def attention_lane(
    rt: Runtime,
    agent: AgentRecord,
    obs: Observation,
    persistent: Block | None,
    cap_chars: int | None = None,
) -> Lane:
    """The capped attention map of ``obs`` (guidance keys removed, sanitised, capped).

    Payloads are copied only when a guidance key must go, so the lane that is
    measured holds the observation's own objects (B6).
    """
    from_files = {channel: _without_guidance(p) for channel, p in obs.payloads.items()}
    lane = sanitise_attention(from_files, persistent)
    if not lane:
        return lane
    return cap_attention(rt, agent, lane, cap_chars, _content_key(obs, from_files, lane))


def attention_preview(agent: AgentRecord, obs: Observation, spiller: Spiller) -> Lane:
    """The attention lane a delivery of ``obs`` would hand over, capped with ``spiller``
    (e.g. :func:`tidings.jobs.cap.spill.planned_attention`); commits nothing."""
    from_files = {channel: _without_guidance(p) for channel, p in obs.payloads.items()}
    lane = sanitise_attention(from_files, None)
    return cap_lane(lane, max_chars(agent.root), spiller) if lane else lane


def _content_key(obs: Observation, from_files: Lane, lane: Lane) -> tuple[object, ...] | None:
    """What determines ``lane`` (block-cap.md B20): the raw fingerprint for channel
    files, the ruler text of the entries it does not cover (the daemon aggregate,
    sanitised pointers); ``None`` if those cannot be written."""
    derived = {k: v for k, v in lane.items() if k == DAEMON or v is not from_files.get(k)}
    try:
        derived_text = ruler_text(derived)
    except Unserialisable:
        return None
    return (tuple(tuple(entry) for entry in obs.raw_fp), derived_text)


def notifications(
    rt: Runtime, agent: AgentRecord, obs: Observation, persistent: Block | None
) -> Notifications:
    """The ``notifications`` object of one stable observation (C24); one cap for both
    lanes (block-cap.md B1)."""
    cap_chars = max_chars(agent.root)
    out: Notifications = {}
    attention = attention_lane(rt, agent, obs, persistent, cap_chars)
    if attention:
        out["attention"] = attention
    if persistent:
        out["persistent"] = cap_persistent(rt, agent, persistent, cap_chars)
    return out


def _sources(attention: Lane) -> list[str]:
    return [name for name in attention if name not in ("overflow", "comment")]


def stamp_with(
    rt: Runtime,
    agent: AgentRecord,
    obs: Observation,
    result: ToolResult,
    persistent: Block | None = None,
) -> ToolResult | None:
    """The stamped copy of ``result`` from ``obs``, or ``None`` when it stays unchanged."""
    if not obs.stable:
        return None
    notes = notifications(rt, agent, obs, persistent)
    if not notes and not is_placeholder(result):
        return None
    # Only ``_meta`` changes: copy that path, not the caller's whole (maybe deep) result.
    stamped = dict(result)
    existing = stamped.get("_meta")
    meta: dict[str, object] = dict(existing) if isinstance(existing, dict) else {}
    attention: Lane = notes.get("attention", {})
    guidance: Guidance = (
        {"transient": {"ref": GUIDANCE_REF, "sources": _sources(attention)}}
        if attention
        else {"transient": {}}
    )
    agent_meta: AgentMeta = {
        "notifications": notes,
        "guidance": guidance,
        "instruction": STAMP_INSTRUCTION,
    }
    meta["agent_meta"] = agent_meta
    stamped["_meta"] = meta
    return stamped


def unavailable(result: ToolResult, reason: str) -> ToolResult:
    """C24: a read that failed or stayed unstable never passes for "nothing is active":
    a check placeholder gets ``notifications_unavailable`` (other results come back
    unchanged)."""
    if not is_placeholder(result):
        return result
    why = UNAVAILABLE_WHY.get(reason, "the store failed underneath the read")
    stamped = dict(result)
    existing = stamped.get("_meta")
    meta: dict[str, object] = dict(existing) if isinstance(existing, dict) else {}
    agent_meta: UnavailableMeta = {
        "notifications_unavailable": {
            "reason": reason,
            "message": UNAVAILABLE_MESSAGE.format(why=why),
        }
    }
    meta["agent_meta"] = agent_meta
    stamped["_meta"] = meta
    return stamped


def stamp(
    rt: Runtime,
    agent: AgentRecord,
    result: ToolResult,
    persistent: Block | None = None,
) -> ToolResult:
    """C24: ``result`` with ``_meta.agent_meta`` stamped from one stable read; a read
    that fails or stays unstable stamps a check placeholder ``notifications_unavailable``."""
    obs = observe(rt, agent)
    if not obs.stable:
        return unavailable(result, obs.reason or "unstable")
    stamped = stamp_with(rt, agent, obs, result, persistent)
    if stamped is None:
        return result
    commit(rt, agent, obs.raw_fp, obs.masked_fp)
    return stamped


def render(rt: Runtime, agent: AgentRecord, persistent: Block | None = None) -> Notifications:
    """C24: the capped ``notifications`` object (``{}`` when nothing is visible)."""
    obs = observe(rt, agent)
    if not obs.stable:
        return cap_only(rt, agent, persistent)
    notes = notifications(rt, agent, obs, persistent)
    commit(rt, agent, obs.raw_fp, obs.masked_fp)
    return notes


def cap_only(rt: Runtime, agent: AgentRecord, persistent: Block | None) -> Notifications:
    """What an unstable read can still deliver: the persistent block alone."""
    if not persistent:
        return {}
    return {"persistent": cap_persistent(rt, agent, persistent)}
