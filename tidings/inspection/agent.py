"""One agent's page: channels, the attention lane as the model receives it, delays,
inbox, memory checkpoint, hooks and recent wakes — all read, nothing committed.

The lane is what a delivery would hand over now (C24, block-cap.md): the same coherent
read, guidance keys removed and the same cap; only the spill file is not written —
the marker names the file a delivery would write (or the one that already holds it).
The hook registry is read without refreshing its stored copy in Redis, and the delay's
overdue alarm is reported, not published.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TypedDict

from tidings.inspection.agent_status import LiveDelay, delay_from_state
from tidings.inspection.agents import StreamEntries, stream_time
from tidings.jobs.cap import Lane, planned_attention
from tidings.jobs.channels import DELAY_ALARM, Allowlist, load_registry, peek_registry_state
from tidings.jobs.consumer import attention_preview, read_state

# The one named exception to "one way down" (issue 21; pyproject.toml): the console is a
# read-only twin. The composed read (jobs.consumer.coherent.observe) would publish an overdue
# delay's alarm (D9), so the console takes the bare read and reports the alarm as overdue.
from tidings.jobs.consumer._bare_read import bare_read, snapshot
from tidings.jobs.inbox import PublicItem, projection
from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.inbox_keys import InboxKeys
from tidings.store.jsonfmt import utc_stamp
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord

#: Wake stream entries shown.
RECENT_WAKES = 20
#: Inbox items shown.
INBOX_ITEMS = 30
#: Checkpoint fields shown (the path table is not read).
CHECKPOINT_FIELDS = ("version", "observed_at", "head", "identity", "overflow_count")


class ChannelRow(TypedDict):
    """One visible channel: its envelope's header, priority and last update."""

    name: str
    header: object
    priority: object
    updated: object
    delayed: bool
    payload: object


class WakeRow(TypedDict):
    """One wake stream entry (``entry``: its JSON, else the stream fields as text)."""

    id: str
    at: str | None
    kind: str
    about: str
    entry: object


class CheckpointView(TypedDict):
    """The memory checkpoint's head and identity (values as stored)."""

    version: object
    observed_at: object
    head: object
    branch: object
    detached: object
    unborn: object
    root: object


class AgentPage(TypedDict):
    """Everything the agent page shows (see the module docstring)."""

    agent: dict[str, str | None]
    now: float
    now_at: str
    files_here: bool
    stable: bool
    read_error: str | None
    channels: list[ChannelRow]
    lane: Lane | None
    overflow: dict[object, object] | None
    delay_state: dict[str, object] | None
    live_delay: LiveDelay | None
    alarm_overdue: bool
    alarm: object
    inbox: list[PublicItem]
    checkpoint: CheckpointView | None
    hooks: list[dict[str, object]]
    hooks_error: str | None
    hooks_loaded: bool
    blocked: list[str]
    oversized: list[str]
    wakes: list[WakeRow]
    wake_cursor: str | None


def _loads(raw: object) -> object:
    if not isinstance(raw, str | bytes | bytearray):
        return None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return None


def channel_rows(payloads: Mapping[str, object], delayed: str | None) -> list[ChannelRow]:
    """Header, priority, last update and delay flag of each visible channel."""
    rows: list[ChannelRow] = []
    for name, payload in payloads.items():
        envelope: Mapping[object, object] = payload if isinstance(payload, dict) else {}
        updated = envelope.get("published_at") or envelope.get("updated_at")
        rows.append(
            {
                "name": name,
                "header": envelope.get("header"),
                "priority": envelope.get("priority"),
                "updated": updated,
                "delayed": name == delayed,
                "payload": payload,
            }
        )
    return rows


#: Where a notification wake's entry names its channels.
SOURCES_PATH = ("result", "_meta", "agent_meta", "guidance", "transient", "sources")


def wake_about(entry: object) -> str:
    """What a wake was for: the channels a notification carried, or the inbox item."""
    if not isinstance(entry, dict):
        return ""
    if isinstance(entry.get("event_id"), str):
        return str(entry["event_id"])
    sources: object = entry
    for key in SOURCES_PATH:
        if not isinstance(sources, dict) or key not in sources:
            return ""
        sources = sources[key]
    return ", ".join(map(str, sources)) if isinstance(sources, list) else ""


def wake_rows(reply: StreamEntries | None) -> list[WakeRow]:
    rows: list[WakeRow] = []
    for wake_id, fields in reply or []:
        decoded = {replies.text(k): replies.text(v) for k, v in fields.items()}
        entry = _loads(decoded.get("entry"))
        text = replies.text(wake_id)
        rows.append(
            {
                "id": text,
                "at": stream_time(text),
                "kind": decoded.get("kind", "?"),
                "about": wake_about(entry),
                "entry": entry if entry is not None else decoded,
            }
        )
    return rows


def checkpoint_view(values: Sequence[object]) -> CheckpointView | None:
    fields = dict(zip(CHECKPOINT_FIELDS, (_loads(v) for v in values), strict=True))
    if fields["version"] is None:
        return None
    head: Mapping[object, object] = fields["head"] if isinstance(fields["head"], dict) else {}
    identity: Mapping[object, object] = (
        fields["identity"] if isinstance(fields["identity"], dict) else {}
    )
    return {
        "version": fields["version"],
        "observed_at": fields["observed_at"],
        "head": head.get("head"),
        "branch": head.get("branch"),
        "detached": head.get("detached"),
        "unborn": head.get("unborn"),
        "root": identity.get("root"),
    }


def agent_page(rt: Runtime, agent: AgentRecord) -> AgentPage:
    """Everything the agent page shows (see the module docstring)."""
    now = rt.clock.now()
    root = agent.root
    state = peek_registry_state(rt, agent)
    allow = Allowlist(state.hook_channels)
    obs = bare_read(rt, agent, allow)
    lane = attention_preview(agent, obs, partial(planned_attention, root)) if obs.stable else None
    every = snapshot(root, allow) if root.is_dir() else {}
    k, ik = AgentKeys(agent.agent_id), InboxKeys(agent.agent_id)
    with rt.redis.pipeline(transaction=False) as pipe:
        pipe.xrevrange(k.wake_stream, count=RECENT_WAKES)
        pipe.smembers(k.blocked)
        pipe.smembers(k.oversized)
        pipe.hmget(ik.checkpoint, list(CHECKPOINT_FIELDS))
        pipe.get(k.wake_cursor)
        wakes, blocked, oversized, checkpoint, cursor = pipe.execute()
    live, overdue = delay_from_state(root, now) if root.is_dir() else (None, False)
    hooks = load_registry(root)
    overflow = lane.get("overflow") if isinstance(lane, dict) else None
    return {
        "agent": agent.public,
        "now": now,
        "now_at": utc_stamp(now),
        "files_here": root.is_dir(),
        "stable": obs.stable,
        "read_error": obs.error,
        "channels": channel_rows(every, obs.delayed),
        "lane": lane,
        "overflow": overflow if isinstance(overflow, dict) else None,
        "delay_state": read_state(root).document if root.is_dir() else None,
        "live_delay": live,
        "alarm_overdue": overdue,
        "alarm": every.get(DELAY_ALARM),
        "inbox": projection(rt, agent.agent_id, INBOX_ITEMS),
        "checkpoint": checkpoint_view(checkpoint),
        "hooks": [m.document() for m in hooks.manifests],
        "hooks_error": hooks.error,
        "hooks_loaded": state.loaded,
        "blocked": sorted(map(replies.text, blocked)),
        "oversized": sorted(map(replies.text, oversized)),
        "wakes": wake_rows(wakes),
        "wake_cursor": replies.text(cursor) if cursor else None,
    }
