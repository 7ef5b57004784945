"""The hub-wide agent registry: agent id -> :class:`AgentRecord`, in one Redis hash.

Every change also moves a version counter, so that a host's watcher notices a
registration or removal with one small read per tick (channels.md C27).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from redis import Redis

from tidings.store import keys
from tidings.store.errors import UnknownAgentError
from tidings.store.models import AgentRecord

logger = logging.getLogger("tidings")


def parse_record(raw: Any, agent_id: str | bytes | None = None) -> AgentRecord | None:
    """The record stored as ``raw``, or ``None`` when there is none or it does not parse.

    One bad record is one skipped record (issue 24): a record that is not valid JSON,
    misses a field or breaks a rule is logged (one line, event ``agent_record_unreadable``)
    and read as absent, so status, the console and listings go on for every other agent.
    """
    if not raw:
        return None
    try:
        return AgentRecord.model_validate_json(raw)
    except ValidationError as exc:
        name = agent_id.decode(errors="backslashreplace") if isinstance(agent_id, bytes) \
            else agent_id
        first = exc.errors()[0]
        problem = f"{'.'.join(map(str, first['loc'])) or 'record'}: {first['msg']}"
        logger.warning("%s", "agent_record_unreadable", extra={
            "event": "agent_record_unreadable",
            "fields": {"agent_id": name, "problem": problem},
        })
        return None


class AgentRegistry:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    def get(self, agent_id: str) -> AgentRecord | None:
        return parse_record(self._redis.hget(keys.AGENTS, agent_id), agent_id)

    def get_many(self, agent_ids: Sequence[str]) -> list[AgentRecord | None]:
        """The records of ``agent_ids`` in order (``None`` where none is registered)."""
        if not agent_ids:
            return []
        raws = self._redis.hmget(keys.AGENTS, list(agent_ids))
        return [parse_record(raw, agent_id) for raw, agent_id in zip(raws, agent_ids, strict=True)]

    def require(self, agent_id: str) -> AgentRecord:
        record = self.get(agent_id)
        if record is None:
            raise UnknownAgentError(f"no agent registered as {agent_id!r}")
        return record

    def put(self, record: AgentRecord) -> None:
        pipe = self._redis.pipeline(transaction=True)
        pipe.hset(keys.AGENTS, record.agent_id, record.model_dump_json())
        pipe.incr(keys.AGENTS_VERSION)
        pipe.execute()

    def remove(self, agent_id: str) -> bool:
        pipe = self._redis.pipeline(transaction=True)
        pipe.hdel(keys.AGENTS, agent_id)
        pipe.incr(keys.AGENTS_VERSION)
        return bool(pipe.execute()[0])

    def version(self) -> int:
        """The registry's change counter (0 before the first change)."""
        return int(self._redis.get(keys.AGENTS_VERSION) or 0)

    def all(self) -> list[AgentRecord]:
        raw = self._redis.hgetall(keys.AGENTS)
        parsed = (parse_record(value, agent_id) for agent_id, value in raw.items())
        return sorted((r for r in parsed if r is not None), key=lambda r: r.agent_id)

    def on_host(self, host: str) -> list[AgentRecord]:
        return [r for r in self.all() if r.host == host]
