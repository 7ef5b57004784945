"""What the console's poller compares between reads: a small signature per watched agent.

Its newest wake entry, inbox counts, checkpoint version and blocked set (one pipeline for
all agents), and for agent pages the channel files' fingerprint and the delay state
file's stat; a page is told to refresh when its agents' signatures change.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from tidings.jobs.channels import Allowlist, peek_registry_state
from tidings.jobs.consumer import STATE_FILE, fingerprint
from tidings.jobs.runtime import Runtime
from tidings.store.files import stat_key
from tidings.store.inbox_keys import InboxKeys
from tidings.store.keys import AgentKeys
from tidings.store.registry import AgentRegistry

#: An agent's signature: its Redis reads (as reprs), and for an agent page its channel
#: files' fingerprint (as repr) with the delay state file's stat key (``None`` otherwise).
Signature = tuple[tuple[str, ...], tuple[str, tuple[int, ...] | None] | None]


def _file_key(path: str) -> tuple[int, ...] | None:
    try:
        return stat_key(os.lstat(path))
    except OSError:
        return None


def signatures(rt: Runtime, shallow: Iterable[str], deep: Iterable[str]) -> dict[str, Signature]:
    """A value per agent that changes whenever what its page shows may have changed."""
    ids = sorted(set(shallow) | set(deep))
    deep_ids = set(deep)
    if not ids:
        return {}
    with rt.redis.pipeline(transaction=False) as pipe:
        for agent_id in ids:
            k, ik = AgentKeys(agent_id), InboxKeys(agent_id)
            pipe.xrevrange(k.wake_stream, count=1)
            pipe.zcard(ik.selectable)
            pipe.zcard(ik.open)
            pipe.zcard(ik.listing)
            pipe.hget(ik.checkpoint, "version")
            pipe.scard(k.blocked)
        replies = pipe.execute()
    registry = AgentRegistry(rt.redis, rt.control)
    out: dict[str, Signature] = {}
    for i, agent_id in enumerate(ids):
        redis_part = tuple(repr(v) for v in replies[6 * i : 6 * i + 6])
        record = registry.get(agent_id) if agent_id in deep_ids else None
        files: tuple[str, tuple[int, ...] | None] | None = None
        if record is not None and record.root.is_dir():
            allow = Allowlist(peek_registry_state(rt, record).hook_channels)
            files = (
                repr(fingerprint(record.root, allow)),
                _file_key(os.path.join(record.workdir, STATE_FILE)),
            )
        out[agent_id] = (redis_part, files)
    return out
