"""The overview's figures: one pipelined round trip, the poller's "status read".

Hosts are the registry's hosts, the hosts with a scheduler lease and the hosts with
a live worker. The first two need a full registry read and a key scan, so they are
refreshed every :data:`HOSTS_REFRESH_SECONDS`; everything else is read each time.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from tidings.scheduler.lease import leader_hosts
from tidings.store import keys, rates
from tidings.store.jsonfmt import utc_stamp
from tidings.workers.presence import worker_counts
from tidings.workers.queue_stats import existing_queues, queue_figures_of, queue_reads
from tidings.workers.routing import host_queue, scheduler_queue

#: Seconds between the registry/lease scans that find hosts.
HOSTS_REFRESH_SECONDS = 30.0


def _json(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def registered_hosts(redis: Any) -> set[str]:
    """Every host an agent is registered on (the records are parsed as plain JSON)."""
    hosts = set()
    for raw in redis.hvals(keys.AGENTS):
        record = _json(raw)
        if record is not None and isinstance(record.get("host"), str):
            hosts.add(record["host"])
    return hosts


@dataclass
class Summary:
    """Reads the overview; remembers the host list between refreshes. ``redis`` is the
    state store, ``control`` the control store (queues, workers, rates)."""

    redis: Any
    control: Any
    _hosts: set[str] = field(default_factory=set)
    _queues: set[str] = field(default_factory=set)
    _hosts_at: float = float("-inf")

    def hosts(self, live: set[str]) -> list[str]:
        if time.monotonic() - self._hosts_at > HOSTS_REFRESH_SECONDS:
            self._hosts = registered_hosts(self.redis) | leader_hosts(self.redis)
            self._queues = existing_queues(self.control)
            self._hosts_at = time.monotonic()
        return sorted(self._hosts | live)

    def read(self, now: float) -> dict[str, Any]:
        """Hosts (workers, leader, last tick), queues, agent count and rates."""
        workers = worker_counts(self.control.hgetall(keys.WORKERS), now)
        hosts = self.hosts(set(workers))
        queues = sorted({q for h in hosts for q in (host_queue(h), scheduler_queue(h))}
                        | self._queues)
        with self.control.pipeline(transaction=False) as pipe:
            queue_reads(pipe, queues)
            figures = queue_figures_of(queues, pipe.execute())
        with self.redis.pipeline(transaction=False) as pipe:
            for host in hosts:
                pipe.get(keys.scheduler_leader(host))
                pipe.get(keys.sync_last(host))
            pipe.hlen(keys.AGENTS)
            rest = pipe.execute()
        host_rows = []
        for i, host in enumerate(hosts):
            leader, last = _json(rest[2 * i]), _json(rest[2 * i + 1])
            host_rows.append({
                "host": host, "workers": workers.get(host, 0),
                "leader": leader.get("holder") if leader else None,
                "since": leader.get("since") if leader else None,
                "last_tick": last,
            })
        series = rates.series(self.control, now)
        return {"at": utc_stamp(now), "hosts": host_rows, "queues": figures,
                "agents": int(rest[-1]), "rates": series,
                "dead": sum(q["dead"] for q in figures)}
