"""Blocked and oversized channel warnings (channels.md C28, C29).

A channel file that no allowlist rule admits is never read; the agent hears about
it once through a ``system`` event. The once-only memory is a durable Redis set
per agent, so restarts of every process do not repeat a warning. A file that the
allowlist admits but that is over the 1 MiB read limit gets the same treatment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tidings.jobs import log
from tidings.jobs.channels import blocked_overflow, names, system_events
from tidings.jobs.channels.allowlisting import Allowlist
from tidings.jobs.channels.payload_files import NOTIFICATION_DIR
from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.files import MAX_READ_BYTES, directory
from tidings.store.keys import AgentKeys
from tidings.store.listing import Listing, derived
from tidings.store.models import AgentRecord

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


def _flaggable(
    listing: Listing, hook_channels: frozenset[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The stems of flaggable regular files: (blocked, allowed); memoised on the listing,
    so a flood of rogue files costs nothing while the directory is unchanged (C50)."""

    def stems() -> tuple[tuple[str, ...], tuple[str, ...]]:
        allow = Allowlist(hook_channels)
        blocked: list[str] = []
        allowed: list[str] = []
        for name in listing.names:
            stem = flaggable_stem(name) if name in listing.regular else None
            if stem is not None:
                (allowed if allow.allows(stem) else blocked).append(stem)
        return tuple(blocked), tuple(allowed)

    return derived(listing, (_flaggable, hook_channels), stems)


@dataclass
class ScanResult:
    blocked: list[str] = field(default_factory=list)
    oversized: list[str] = field(default_factory=list)


def _publish_warning(
    rt: Runtime,
    agent: AgentRecord,
    set_key: str,
    channel: str,
    source: str,
    kind: str,
    body: str,
) -> bool:
    """Warn about ``channel``, which just joined ``set_key``. A failed publish leaves the
    set again, so the next tick retries: no warning is silently lost."""
    try:
        result = system_events.notify(
            rt, agent, source=source, ref_id=f"{kind}:{channel}", body=body
        )
    except Exception:
        rt.redis.srem(set_key, channel)
        raise
    if result["status"] == "error":
        rt.redis.srem(set_key, channel)
        log.event(
            "notification_warning_failed",
            agent_id=agent.agent_id,
            channel=channel,
            reason=result["reason"],
        )
        return False
    return True


@dataclass(frozen=True)
class KnownSets:
    """The agent's warning state as the sync tick read it for many agents at once (C27)."""

    blocked: frozenset[str]
    #: The overflow notice's last count, as read (C50).
    blocked_overflow: object
    oversized: frozenset[str]


def _warn_blocked(
    rt: Runtime,
    agent: AgentRecord,
    allow: Allowlist,
    present: tuple[str, ...],
    known: KnownSets | None,
) -> list[str]:
    """C28, C50: warn new blocked channels one by one while the set has room; count the
    rest in the overflow notice. Two round trips however many files are present."""
    k = AgentKeys(agent.agent_id)
    if known is None:
        pipe = rt.redis.pipeline(transaction=False)
        pipe.smembers(k.blocked)
        pipe.get(k.blocked_overflow)
        members, last = pipe.execute()
        warned = {replies.text(member) for member in members}
    else:
        warned, last = set(known.blocked), known.blocked_overflow
    resolved = [channel for channel in warned if allow.allows(channel)]
    if resolved:
        rt.redis.srem(k.blocked, *resolved)
        warned.difference_update(resolved)
    fresh = set(present) - warned
    room = blocked_overflow.MAX_WARNED_BLOCKED - len(warned)
    newly: list[str] = []
    for stem in sorted(fresh) if room > 0 else ():
        if len(newly) >= room:
            break
        joined = blocked_overflow.join(rt, agent, stem)
        if joined < 0:  # a concurrent tick filled the set
            room = len(newly)
            break
        if joined and _publish_warning(
            rt, agent, k.blocked, stem, "notification_hook", "blocked_channel", blocked_body(stem)
        ):
            newly.append(stem)
    full = len(newly) >= room
    # While the set has room, a channel left unwarned is a failed publish, retried next tick.
    blocked_overflow.announce(rt, agent, len(fresh) - len(newly) if full else 0, last)
    return newly


def scan(
    rt: Runtime,
    agent: AgentRecord,
    allow: Allowlist,
    *,
    registry_loaded: bool,
    known: KnownSets | None = None,
) -> ScanResult:
    """C28 for one agent: warn about new blocked and oversized files, forget resolved ones
    (``known``: the Redis side as the sync tick read it; else it is read here)."""
    k = AgentKeys(agent.agent_id)
    found = ScanResult()
    present_big: set[str] = set()
    blocked: tuple[str, ...] = ()
    with directory(agent.root, NOTIFICATION_DIR) as view:
        blocked, allowed = _flaggable(view.listing(), allow.hook_channels) if view else ((), ())
        for stem in allowed:  # only a listed directory allows any
            entry = view.entry(f"{stem}.json") if view else None
            if entry is None or not entry.is_regular or entry.stat.st_size <= MAX_READ_BYTES:
                continue
            present_big.add(stem)
            if rt.redis.sadd(k.oversized, stem) and _publish_warning(
                rt,
                agent,
                k.oversized,
                stem,
                "notification_store",
                "oversized_channel",
                oversized_body(stem),
            ):
                found.oversized.append(stem)
    if registry_loaded:
        found.blocked = _warn_blocked(rt, agent, allow, blocked, known)
    oversized = known.oversized if known else map(replies.text, rt.redis.smembers(k.oversized))
    for channel in oversized:
        if channel not in present_big:
            rt.redis.srem(k.oversized, channel)
    return found
