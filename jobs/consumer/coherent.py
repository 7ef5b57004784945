"""D9 then C22: the composed read every consumer-facing path takes.

delay.md D9 makes every coherent read publish an overdue alarm first. That step
writes, so it is composed here, above the reading module, which only reads
(guide.md rule 8). This is the one way down to the payloads from outside
``jobs/consumer/``: the bare read is private to the package (issue 21).
"""

from __future__ import annotations

from redis.exceptions import RedisError

from tidings.jobs.consumer import delay_alarm
from tidings.jobs.consumer._bare_read import bare_read
from tidings.jobs.consumer.read import Observation, failed_read
from tidings.jobs.runtime import Runtime
from tidings.store.errors import TidingsError
from tidings.store.models import AgentRecord


def observe(rt: Runtime, agent: AgentRecord) -> Observation:
    """Reconcile the delay (D9), then take the coherent read (C22); fail open."""
    try:
        delay_alarm.reconcile(rt, agent)
    except (RedisError, TidingsError, OSError) as exc:
        return failed_read(agent, exc)
    return bare_read(rt, agent)
