"""The overview's figures: a few round trips, the poller's "status read".

Hosts are the hub-wide host set (every host an agent was registered on or a scheduler
ran on) and the hosts with a live worker; the agent count sums the per-host indexes.
Nothing scans the keyspace (issue 25), so the read does not grow with other keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from redis import Redis

from tidings.inspection.store_facts import StoreFacts, read_facts
from tidings.store import keys, rates
from tidings.store.jsonfmt import utc_stamp
from tidings.store.registry import AgentRegistry
from tidings.workers.presence import worker_counts
from tidings.workers.queue_stats import queue_figures_of, queue_reads
from tidings.workers.routing import host_queue, scheduler_queue


class HostRow(TypedDict):
    """A host's workers, scheduler leader (values as stored) and last tick record."""

    host: str
    workers: int
    leader: object
    since: object
    last_tick: dict[str, object] | None


class Overview(TypedDict):
    """The overview's figures (``rates``: per kind, per-second rates, oldest first)."""

    at: str
    hosts: list[HostRow]
    queues: Sequence[Mapping[str, object]]
    agents: int
    rates: dict[str, list[float]]
    dead: int
    #: The state store's engine and durability.
    store: StoreFacts


def _json(raw: object) -> dict[str, object] | None:
    if not isinstance(raw, str | bytes | bytearray):
        return None
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


@dataclass
class Summary:
    """Reads the overview: ``redis`` is the state store, ``control`` the control store
    (queues, workers, rates, the host set)."""

    redis: Redis
    control: Redis
    #: What the state store was served as, where tidings serves it (store_facts.py).
    store_label: str | None = None

    def read(self, now: float) -> Overview:
        """Hosts (workers, leader, last tick), queues, agent count, rates and the store."""
        workers = worker_counts(self.control.hgetall(keys.WORKERS), now)
        hosts = sorted(set(AgentRegistry(self.redis, self.control).hosts()) | set(workers))
        queues = sorted({q for h in hosts for q in (host_queue(h), scheduler_queue(h))})
        with self.control.pipeline(transaction=False) as pipe:
            queue_reads(pipe, queues)
            figures = queue_figures_of(queues, pipe.execute())
        with self.redis.pipeline(transaction=False) as pipe:
            for host in hosts:
                pipe.get(keys.scheduler_leader(host))
                pipe.get(keys.sync_last(host))
            for host in hosts:
                pipe.hlen(keys.host_agents(host))
            rest = pipe.execute()
        counts = rest[2 * len(hosts) :]
        host_rows: list[HostRow] = []
        for i, host in enumerate(hosts):
            leader, last = _json(rest[2 * i]), _json(rest[2 * i + 1])
            host_rows.append(
                {
                    "host": host,
                    "workers": workers.get(host, 0),
                    "leader": leader.get("holder") if leader else None,
                    "since": leader.get("since") if leader else None,
                    "last_tick": last,
                }
            )
        series = rates.series(self.control, now)
        return {
            "at": utc_stamp(now),
            "hosts": host_rows,
            "queues": figures,
            "agents": sum(int(n) for n in counts),
            "rates": series,
            "dead": sum(q["dead"] for q in figures),
            "store": read_facts(self.redis, self.store_label),
        }
