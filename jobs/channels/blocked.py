"""Blocked and oversized channel warnings (channels.md C28, C29).

A channel file that no allowlist rule admits is never read; the agent hears about
it once through a ``system`` event. The once-only memory is a durable Redis set
per agent, so restarts of every process do not repeat a warning. A file that the
allowlist admits but that is over the 1 MiB read limit gets the same treatment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tidings.jobs import log
from tidings.jobs.channels import names, system_events
from tidings.jobs.channels.allowlist import Allowlist
from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.files import MAX_READ_BYTES, list_dir
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord

NOTIFICATION_DIR = ".notification"
#: C28: stems of files that are never flagged.
UNFLAGGED_STEMS = frozenset({"hooks", "large_result_acks", names.DAEMON})


def blocked_body(channel: str) -> str:
    return (
        f"Channel '{channel}' is not registered; its notifications do not pass through. "
        "See notification(action='list') and notification(action='add', ...)."
    )


def oversized_body(channel: str) -> str:
    return (
        f"Channel '{channel}' is over the 1 MiB read limit; it is not delivered until its "
        "producer writes a smaller file."
    )


def flaggable_stem(name: str) -> str | None:
    """C28: the stem of a name that could be flagged, else ``None``."""
    if not name.endswith(".json"):
        return None
    stem = name[:-5]
    if names.name_error(stem) is not None or stem in UNFLAGGED_STEMS:
        return None
    return stem


@dataclass
class ScanResult:
    blocked: list[str] = field(default_factory=list)
    oversized: list[str] = field(default_factory=list)


def _warn_once(
    rt: Runtime, agent: AgentRecord, set_key: str, channel: str, source: str, kind: str,
    body: str,
) -> bool:
    """Join the set; only the caller that added the member publishes. A failed publish
    leaves the set again, so the next tick retries: no warning is silently lost."""
    if not rt.redis.sadd(set_key, channel):
        return False
    try:
        result: dict[str, Any] = system_events.notify(
            rt, agent, source=source, ref_id=f"{kind}:{channel}", body=body
        )
    except Exception:
        rt.redis.srem(set_key, channel)
        raise
    if result.get("status") != "ok":
        rt.redis.srem(set_key, channel)
        log.event("notification_warning_failed", agent_id=agent.agent_id, channel=channel,
                  reason=result.get("reason"))
        return False
    return True


def _members(rt: Runtime, key: str, known: frozenset[str] | None) -> frozenset[str]:
    if known is not None:
        return known
    return frozenset(map(replies.text, rt.redis.smembers(key)))


def scan(rt: Runtime, agent: AgentRecord, allow: Allowlist, *, registry_loaded: bool,
         known: tuple[frozenset[str], frozenset[str]] | None = None) -> ScanResult:
    """C28 for one agent: warn about new blocked and oversized files, forget resolved ones.

    ``known``: the blocked and oversized sets as the sync tick read them for many
    agents at once (C27); else they are read here.
    """
    k = AgentKeys(agent.agent_id)
    found = ScanResult()
    present_big: set[str] = set()
    if registry_loaded:
        for channel in _members(rt, k.blocked, known[0] if known else None):
            if allow.allows(channel):
                rt.redis.srem(k.blocked, channel)
    for entry in list_dir(agent.root, NOTIFICATION_DIR) or []:
        stem = flaggable_stem(entry.name)
        if stem is None or not entry.is_regular:
            continue
        if not allow.allows(stem):
            if registry_loaded and _warn_once(
                rt, agent, k.blocked, stem, "notification_hook", "blocked_channel",
                blocked_body(stem),
            ):
                found.blocked.append(stem)
        elif entry.stat.st_size > MAX_READ_BYTES:
            present_big.add(stem)
            if _warn_once(rt, agent, k.oversized, stem, "notification_store",
                          "oversized_channel", oversized_body(stem)):
                found.oversized.append(stem)
    for channel in _members(rt, k.oversized, known[1] if known else None):
        if channel not in present_big:
            rt.redis.srem(k.oversized, channel)
    return found
