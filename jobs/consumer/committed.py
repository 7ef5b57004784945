"""The committed fingerprints in Redis: *delivered* (raw) and *wake* (masked) (C23).

``delivered`` is what the agent has seen — the base of dismissal's
compare-and-swap (C35). ``wake`` is what the sync tick compares against before it
wakes the agent (C27). Both are compact JSON lists of ``[filename, size, sha]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tidings.jobs.channels import FpEntry
from tidings.jobs.consumer import wake_mask
from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.jsonfmt import compact
from tidings.store.jsonread import loads_or
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord
from tidings.store.scripts import wake as wake_scripts

#: How often a patch retries when a concurrent delivery moved a fingerprint.
PATCH_ATTEMPTS = 20


@dataclass(frozen=True)
class Committed:
    """Both fingerprints as read (``""`` = never committed)."""

    delivered_text: str
    wake_text: str

    @property
    def delivered(self) -> list[FpEntry]:
        return _entries(loads_or(self.delivered_text or None, []))

    def wake(self, root: Path, delayed: str | None) -> list[FpEntry]:
        value = loads_or(self.wake_text or None, None)
        if isinstance(value, list):
            return _entries(value)
        return wake_mask.baseline(root, delayed)

    def delivered_entry(self, filename: str) -> FpEntry | None:
        return next((e for e in self.delivered if e[0] == filename), None)


def _entries(value: object) -> list[FpEntry]:
    """A stored fingerprint's entries (the lists in it; none where it is not a list)."""
    return [e for e in value if isinstance(e, list)] if isinstance(value, list) else []


def read(rt: Runtime, agent: AgentRecord) -> Committed:
    k = AgentKeys(agent.agent_id)
    delivered, wake = rt.redis.mget([k.delivered_fp, k.wake_fp])
    return Committed(replies.text_or_none(delivered) or "", replies.text_or_none(wake) or "")


def swap(
    rt: Runtime, agent: AgentRecord, seen: Committed, delivered: list[FpEntry], wake: list[FpEntry]
) -> bool:
    """Replace both if neither moved since ``seen`` (one script)."""
    return _swap_texts(rt, agent, seen, compact(delivered), compact(wake))


def _swap_texts(
    rt: Runtime, agent: AgentRecord, seen: Committed, delivered: str, wake: str
) -> bool:
    return wake_scripts.swap_fingerprints(
        rt.scripts,
        agent.agent_id,
        expected_delivered=seen.delivered_text,
        delivered=delivered,
        expected_wake=seen.wake_text,
        wake=wake,
    )


def _replace(fp: list[FpEntry], filename: str, entry: FpEntry | None) -> list[FpEntry]:
    kept = [list(e) for e in fp if e[0] != filename]
    if entry is not None:
        kept.append(list(entry))
    return sorted(kept, key=lambda e: str(e[0]))


def patch(
    rt: Runtime,
    agent: AgentRecord,
    filename: str,
    raw_entry: FpEntry | None,
    wake_entry: FpEntry | None,
    delayed: str | None,
) -> bool:
    """C36: both fingerprints take ``filename``'s new entries (or lose them).

    Other channels' entries stay as they were, so a concurrent producer's change
    elsewhere still wakes the agent.
    """
    for _ in range(PATCH_ATTEMPTS):
        seen = read(rt, agent)
        delivered = _replace(seen.delivered, filename, raw_entry)
        wake = _replace(seen.wake(agent.root, delayed), filename, wake_entry)
        if swap(rt, agent, seen, delivered, wake):
            return True
    return False


def patch_wake(
    rt: Runtime, agent: AgentRecord, entries: dict[str, FpEntry | None], delayed: str | None
) -> bool:
    """C23: the wake fingerprint takes each ``filename -> entry`` (``None``: loses it);
    the delivered one and every other entry stay, so other channels' news still wakes."""
    for _ in range(PATCH_ATTEMPTS):
        seen = read(rt, agent)
        wake = seen.wake(agent.root, delayed)
        for filename, entry in entries.items():
            wake = _replace(wake, filename, entry)
        if _swap_texts(rt, agent, seen, seen.delivered_text, compact(wake)):
            return True
    return False
