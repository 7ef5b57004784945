"""The hub-wide agent registry: agent id -> :class:`AgentRecord`, in one Redis hash."""

from __future__ import annotations

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

    def require(self, agent_id: str) -> AgentRecord:
        record = self.get(agent_id)
        if record is None:
            raise UnknownAgentError(f"no agent registered as {agent_id!r}")
        return record

    def put(self, record: AgentRecord) -> None:
        self._redis.hset(keys.AGENTS, record.agent_id, record.model_dump_json())

    def remove(self, agent_id: str) -> bool:
        return bool(self._redis.hdel(keys.AGENTS, agent_id))

    def all(self) -> list[AgentRecord]:
        raw = self._redis.hgetall(keys.AGENTS)
        records = [AgentRecord.model_validate_json(v) for v in raw.values()]
        return sorted(records, key=lambda r: r.agent_id)

    def on_host(self, host: str) -> list[AgentRecord]:
        return [r for r in self.all() if r.host == host]
