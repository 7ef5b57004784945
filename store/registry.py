"""The hub-wide agent registry: agent id -> :class:`AgentRecord`, in one Redis hash.

Every change also moves a version counter, so that a host's watcher notices a
registration or removal with one small read per tick (channels.md C27).
"""

from __future__ import annotations

from collections.abc import Sequence

from redis import Redis

from tidings.store import keys
from tidings.store.errors import UnknownAgentError
from tidings.store.models import AgentRecord


class AgentRegistry:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    def get(self, agent_id: str) -> AgentRecord | None:
        raw = self._redis.hget(keys.AGENTS, agent_id)
        return AgentRecord.model_validate_json(raw) if raw else None

    def get_many(self, agent_ids: Sequence[str]) -> list[AgentRecord | None]:
        """The records of ``agent_ids`` in order (``None`` where none is registered)."""
        if not agent_ids:
            return []
        raws = self._redis.hmget(keys.AGENTS, list(agent_ids))
        return [AgentRecord.model_validate_json(raw) if raw else None for raw in raws]

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
        records = [AgentRecord.model_validate_json(v) for v in raw.values()]
        return sorted(records, key=lambda r: r.agent_id)

    def on_host(self, host: str) -> list[AgentRecord]:
        return [r for r in self.all() if r.host == host]
