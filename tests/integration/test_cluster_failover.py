"""Issue 25, acceptance 5: a cluster primary dies under a stream of publishes and the
stream goes on (interfaces.md "Past one Redis", Failover).

Three primaries with a replica each, ``cluster-node-timeout 1000``. The primary that
holds the most agents is SIGKILLed as a crashed host would be; its replica is promoted by
the cluster itself. Every ``publish_event(wait=True)`` after the kill answers ok within
the 30 s failover budget, with no retry by the caller; every event that was replicated
before the kill, or published after it, is in its channel file once and in order.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis

import tidings
from tests.support.groups import TIMING
from tests.support.polling import wait_until
from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisServer
from tidings.jobs.channels import flush_channel
from tidings.store.keys import AgentKeys
from tidings.store.settings import Settings

pytestmark = pytest.mark.redis_server

AGENTS = 6
CHANNEL = "mcp.failover"
#: The failover budget of one call (store.connection.FAILOVER_RETRY_SECONDS).
BUDGET_SECONDS = 30.0
#: Pause between two publishes of one producer.
PACE_SECONDS = 0.01


class Producer(threading.Thread):
    """Publishes ``{"n": i}`` (idempotency key ``k<i>``, ``wait=True``) until halted;
    records how long each call took and stops at the first call that fails."""

    def __init__(self, agent: Any) -> None:
        super().__init__(daemon=True)
        self.agent = agent
        self.acknowledged: list[int] = []
        self.seconds: list[float] = []
        self.failure: BaseException | dict[str, Any] | None = None
        self.halt = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.halt.is_set():
            started = time.monotonic()
            try:
                result = self.agent.publish_event(
                    CHANNEL, {"n": n}, idempotency_key=f"k{n}", wait=True
                )
            except BaseException as exc:
                self.failure = exc
                return
            self.seconds.append(time.monotonic() - started)
            if result.get("status") != "ok":
                self.failure = result
                return
            self.acknowledged.append(n)
            n += 1
            time.sleep(PACE_SECONDS)


def numbers(workdir: Path) -> list[int]:
    data = json.loads((workdir / ".notification" / f"{CHANNEL}.json").read_text("utf-8"))
    return [int(event["n"]) for event in data["data"]["events"]]


def victim(cluster: RedisCluster, agent_ids: list[str]) -> RedisServer:
    """The primary holding the most of the agents' records."""
    held: Counter[int] = Counter()
    for port, found in cluster.keys_by_node().items():
        held[port] = sum(1 for a in agent_ids if AgentKeys(a).tag + ":record" in found)
    port = held.most_common(1)[0][0]
    return next(node for node in cluster.nodes if node.port == port)


def replicate(node: RedisServer, agent_id: str) -> None:
    """Write once to ``node`` and wait until its replica has everything written before."""
    with node.client() as c:
        c.set(f"{AgentKeys(agent_id).tag}:probe", 1)
        assert c.execute_command("WAIT", 1, 5000) == 1


def test_publishing_goes_on_through_a_primary_failover(
    tmp_path: Path, own_redis: RedisServer
) -> None:
    cluster = RedisCluster(tmp_path / "cluster", replicas=1).start()
    try:
        hub = tidings.connect(
            cluster.url, broker_url=own_redis.url, settings=Settings(host="failover-host")
        )
        try:
            hub.start_worker(threads=4)
            workdirs = [tmp_path / f"w{n}" for n in range(AGENTS)]
            agents = []
            for workdir in workdirs:
                workdir.mkdir()
                agents.append(hub.agent(workdir, max_events={CHANNEL: 10_000}))
            node = victim(cluster, [a.agent_id for a in agents])
            on_victim = next(
                a.agent_id
                for a in agents
                if f"{AgentKeys(a.agent_id).tag}:record" in cluster.keys_by_node()[node.port]
            )
            producers = [Producer(agent) for agent in agents]
            for producer in producers:
                producer.start()
            try:
                wait_until(
                    lambda: all(len(p.acknowledged) >= 10 or p.failure for p in producers),
                    timeout=30,
                    what="events before the kill",
                )
                before = [len(p.acknowledged) for p in producers]
                replicate(node, on_victim)
                node.kill()
                after = [len(p.acknowledged) for p in producers]
                killed_at = [len(p.seconds) for p in producers]
                wait_until(
                    lambda: all(
                        len(p.acknowledged) >= a + 20 or p.failure
                        for p, a in zip(producers, after, strict=True)
                    ),
                    timeout=90,
                    what="events after the kill",
                )
            finally:
                for producer in producers:
                    producer.halt.set()
                for producer in producers:
                    producer.join(60)
            assert [p.failure for p in producers] == [None] * AGENTS
            slowest = max(max(p.seconds[k:]) for p, k in zip(producers, killed_at, strict=True))
            assert slowest < BUDGET_SECONDS, slowest
            for agent, workdir, producer, b, a in zip(
                agents, workdirs, producers, before, after, strict=True
            ):
                # The sync tick drains a flush the failover interrupted (C15); here directly.
                flush_channel(agent.runtime, agent.record, CHANNEL)
                found = numbers(workdir)
                assert len(found) == len(set(found)) and found == sorted(found), found
                must = set(producer.acknowledged[:b]) | set(producer.acknowledged[a:])
                assert must <= set(found), sorted(must - set(found))
        finally:
            hub.close()
    finally:
        cluster.stop()


@TIMING
def test_a_stop_cuts_a_cluster_retry_short(tmp_path: Path, own_redis: RedisServer) -> None:
    """The failover retry of a cluster client ends at once when the process stops
    (store.connection.stop_retrying), as the Sentinel clients' does."""
    cluster = RedisCluster(tmp_path / "cluster").start()
    stopping = threading.Event()
    try:
        hub = tidings.connect(
            cluster.url, broker_url=own_redis.url, settings=Settings(host="stop-host")
        )
        try:
            hub.redis.get_retry().stopping = stopping  # type: ignore[attr-defined]
            for node in cluster.nodes:
                node.kill()
            threading.Timer(0.5, stopping.set).start()
            started = time.monotonic()
            with pytest.raises((redis.RedisError, redis.exceptions.RedisClusterException)):
                hub.redis.get("{a:x}:k")
            assert time.monotonic() - started < 5
        finally:
            hub.close()
    finally:
        cluster.stop()
