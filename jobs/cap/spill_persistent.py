"""Persistent-lane spills, deduplicated by content (block-cap.md B11).

The agent's Redis index maps the sha256 of a spill's canonical text to the
basename it was first written under (the most recent 256 kept, both keys changed
by one script). A known, still-equal file is reused; otherwise the names
``notification-overflow-<ts>[-N].json`` are tried by exclusive creation. The
index is an optimisation: when Redis fails, the spill still happens (the name
scan finds an equal file written in the same second) and the failure is logged.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

from redis.exceptions import RedisError

from tidings.jobs import log
from tidings.jobs.cap import spill
from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord
from tidings.store.scripts import channels as channel_scripts

#: B11: the persistent spill stem; the name is ``<stem><unix seconds>[-N].json``.
PERSISTENT_STEM = "notification-overflow-"
#: B11: index entries kept per agent.
INDEX_SIZE = 256

_NAME = re.compile(r"notification-overflow-[0-9]+(-[0-9]{1,3})?\.json")


class SpillIndex(Protocol):
    """Content digest → basename of the file first spilled with that content."""

    def known(self, digest: str) -> str | None: ...

    def remember(self, digest: str, name: str) -> None: ...


class RedisSpillIndex:
    """The agent's index in Redis (``AgentKeys.persistent_spills`` and its order)."""

    def __init__(self, rt: Runtime, agent: AgentRecord) -> None:
        self.rt = rt
        self.agent_id = agent.agent_id
        self.keys = AgentKeys(agent.agent_id)

    def known(self, digest: str) -> str | None:
        return replies.text_or_none(self.rt.redis.hget(self.keys.persistent_spills, digest))

    def remember(self, digest: str, name: str) -> None:
        channel_scripts.remember_spill(
            self.rt.scripts,
            self.agent_id,
            digest=digest,
            name=name,
            used_at=repr(self.rt.clock.now()),
            kept=INDEX_SIZE,
        )


def _known(root: Path, index: SpillIndex, request: spill.SpillRequest) -> str | None:
    try:
        name = index.known(request.digest)
    except RedisError as exc:
        log.event("notification_spill_index_failed", workdir=str(root), error=type(exc).__name__)
        return None
    if name is None or not _NAME.fullmatch(name):
        return None
    return name if spill.holds(root, name, request) else None


def spill_persistent(
    root: Path, request: spill.SpillRequest, index: SpillIndex, now: float
) -> spill.Spill:
    """B11: reuse the indexed file of equal content, else take a ``<ts>`` name."""
    name = _known(root, index, request)
    if name is not None:
        outcome = spill.Spill(name, spill.spill_path(root, name))
    else:
        stem = f"{PERSISTENT_STEM}{int(now)}"
        outcome = spill.take(root, spill.suffixed(stem), request, lane="persistent")
    if outcome.name is not None:
        try:
            index.remember(request.digest, outcome.name)
        except RedisError as exc:
            log.event(
                "notification_spill_index_failed", workdir=str(root), error=type(exc).__name__
            )
    return outcome
