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
from functools import partial
from typing import Any

from tidings.inspection.agents import stream_time
from tidings.jobs.cap.spill import planned_attention
from tidings.jobs.channels.allowlist import Allowlist, load_registry, peek_registry_state
from tidings.jobs.channels.names import DELAY_ALARM
from tidings.jobs.delay.state import read_state
from tidings.jobs.inbox import items as inbox_items
from tidings.jobs.runtime import Runtime

# The one named exception to "one way down" (issue 21; pyproject.toml): the console is a
# read-only twin. The composed read (jobs.view.coherent.observe) would publish an overdue
# delay's alarm (D9), so the console takes the bare read and reports the alarm as overdue.
from tidings.jobs.view._bare_read import bare_read, snapshot
from tidings.jobs.view.delivery import attention_preview
from tidings.jobs.view.status import delay_from_state
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


def _loads(raw: Any) -> Any:
    try:
        return json.loads(raw) if raw is not None else None
    except (UnicodeDecodeError, ValueError):
        return None


def channel_rows(payloads: dict[str, Any], delayed: str | None) -> list[dict[str, Any]]:
    """Header, priority, last update and delay flag of each visible channel."""
    rows = []
    for name, payload in payloads.items():
        envelope = payload if isinstance(payload, dict) else {}
        updated = envelope.get("published_at") or envelope.get("updated_at")
        rows.append({"name": name, "header": envelope.get("header"),
                     "priority": envelope.get("priority"), "updated": updated,
                     "delayed": name == delayed, "payload": payload})
    return rows


def wake_about(entry: Any) -> str:
    """What a wake was for: the channels a notification carried, or the inbox item."""
    if not isinstance(entry, dict):
        return ""
    if isinstance(entry.get("event_id"), str):
        return str(entry["event_id"])
    try:
        sources = entry["result"]["_meta"]["agent_meta"]["guidance"]["transient"]["sources"]
    except (KeyError, TypeError):
        return ""
    return ", ".join(map(str, sources)) if isinstance(sources, list) else ""


def wake_rows(reply: Any) -> list[dict[str, Any]]:
    rows = []
    for wake_id, fields in reply or []:
        decoded = {replies.text(k): replies.text(v) for k, v in fields.items()}
        entry = _loads(decoded.get("entry"))
        text = replies.text(wake_id)
        rows.append({"id": text, "at": stream_time(text), "kind": decoded.get("kind", "?"),
                     "about": wake_about(entry),
                     "entry": entry if entry is not None else decoded})
    return rows


def checkpoint_view(values: list[Any]) -> dict[str, Any] | None:
    fields = dict(zip(CHECKPOINT_FIELDS, (_loads(v) for v in values), strict=True))
    if fields["version"] is None:
        return None
    head = fields["head"] if isinstance(fields["head"], dict) else {}
    identity = fields["identity"] if isinstance(fields["identity"], dict) else {}
    return {"version": fields["version"], "observed_at": fields["observed_at"],
            "head": head.get("head"), "branch": head.get("branch"),
            "detached": head.get("detached"), "unborn": head.get("unborn"),
            "root": identity.get("root")}


def agent_page(rt: Runtime, agent: AgentRecord) -> dict[str, Any]:
    """Everything the agent page shows (see the module docstring)."""
    now = rt.clock.now()
    root = agent.root
    state = peek_registry_state(rt, agent)
    allow = Allowlist(state.hook_channels)
    obs = bare_read(rt, agent, allow)
    lane = attention_preview(agent, obs, partial(planned_attention, root)) if obs.stable \
        else None
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
        "agent": agent.public, "now": now, "now_at": utc_stamp(now),
        "files_here": root.is_dir(), "stable": obs.stable, "read_error": obs.error,
        "channels": channel_rows(every, obs.delayed),
        "lane": lane, "overflow": overflow if isinstance(overflow, dict) else None,
        "delay_state": read_state(root).document if root.is_dir() else None,
        "live_delay": live, "alarm_overdue": overdue,
        "alarm": every.get(DELAY_ALARM),
        "inbox": inbox_items.projection(rt, agent.agent_id, INBOX_ITEMS),
        "checkpoint": checkpoint_view(checkpoint),
        "hooks": [m.document() for m in hooks.manifests], "hooks_error": hooks.error,
        "hooks_loaded": state.loaded,
        "blocked": sorted(map(replies.text, blocked)),
        "oversized": sorted(map(replies.text, oversized)),
        "wakes": wake_rows(wakes), "wake_cursor": replies.text(cursor) if cursor else None,
    }
