"""The run fence that makes moving an agent between hosts safe (issue 7).

Every actor run for an agent enters the agent's running set (a sorted set
``{a:<agent_id>}:running`` of ``<host>:<token>`` scored by lease expiry) *before*
it reads the agent's host from the registry, and leaves it when done. A move
changes the registry first, then waits until no run of the old host is left in
the set. Redis orders the two: a run that entered before the change is waited
for; a run that entered after it reads the new host and forwards its message.
So once a move has settled, the old host writes nothing more for the agent.
"""

from __future__ import annotations

import uuid

from redis import Redis

from tidings.store import replies
from tidings.store.clock import Clock
from tidings.store.keys import AgentKeys, agent_record

#: How long a run's entry counts if its worker dies before leaving (seconds):
#: longer than dramatiq's default time limit (10 minutes).
RUN_LEASE_SECONDS = 900.0
#: Pause between two looks at the running set while a move settles (seconds).
SETTLE_POLL_SECONDS = 0.05


def running_key(agent_id: str) -> str:
    return f"{AgentKeys(agent_id).tag}:running"


class RunFence:
    def __init__(self, redis: Redis, clock: Clock) -> None:
        self._redis = redis
        self._clock = clock

    def enter(self, agent_id: str, host: str) -> str:
        """Register a run on ``host``; returns the token to :meth:`leave` with."""
        return self.enter_reading(agent_id, host)[0]

    def enter_reading(self, agent_id: str, host: str) -> tuple[str, bytes | str | None]:
        """:meth:`enter`, then read the agent's stored record, in one round trip (both keys
        are in the agent's slot, and the pipeline keeps the order the fence needs)."""
        token = f"{host}:{uuid.uuid4().hex}"
        with self._redis.pipeline(transaction=False) as pipe:
            pipe.zadd(running_key(agent_id), {token: self._clock.now() + RUN_LEASE_SECONDS})
            pipe.get(agent_record(agent_id))
            _, raw = pipe.execute()
        return token, raw

    def leave(self, agent_id: str, token: str) -> None:
        self._redis.zrem(running_key(agent_id), token)

    def runs_on(self, agent_id: str, host: str) -> int:
        """Live runs of ``agent_id`` on ``host`` (expired leases are dropped)."""
        key = running_key(agent_id)
        self._redis.zremrangebyscore(key, "-inf", self._clock.now())
        prefix = f"{host}:"
        members = self._redis.zrange(key, 0, -1)
        return len([m for m in members if replies.text(m).startswith(prefix)])

    def settle(self, agent_id: str, host: str, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for the runs on ``host`` to end; returns
        how many are still running."""
        deadline = self._clock.monotonic() + timeout
        left = self.runs_on(agent_id, host)
        while left and self._clock.monotonic() < deadline:
            self._clock.sleep(SETTLE_POLL_SECONDS)
            left = self.runs_on(agent_id, host)
        return left
