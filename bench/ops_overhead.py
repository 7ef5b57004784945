"""What the operations machinery costs in steady state (issue 7).

* the failover retry client (store/connection.py) against a plain redis-py client,
  on ``publish_event`` with inline flushes against a real redis-server;
* the actor wrapper (registry read and the run fence's two extra Redis commands per
  message, for safe agent moves) against calling the job directly, and the fence's
  share of one publish with its flush.

Prints one JSON object: figures and the in-run baselines as ratios.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis
from dramatiq.brokers.stub import StubBroker

import tidings
from tests.support.dispatch import InlineJobs
from tests.support.redis_server import RedisServer
from tidings.jobs.runtime import Runtime
from tidings.store.clock import SystemClock
from tidings.store.connection import client_for
from tidings.store.models import AgentRecord
from tidings.store.placement import RunFence
from tidings.store.settings import RedisConfig, Settings
from tidings.workers.actors import agent_actor

#: Publishes per measured run, and actor calls per measured run.
PUBLISHES = int(os.environ.get("BENCH_PUBLISHES", "300"))
ACTOR_CALLS = int(os.environ.get("BENCH_ACTOR_CALLS", "2000"))
HOST = "bench"


def publish_rate(client: Any, root: Path, name: str) -> float:
    hub = tidings.connect(client=client, settings=Settings(host=HOST))
    workdir = root / name
    workdir.mkdir()
    agent = hub.agent(workdir, max_events={"mcp.bench": 10_000}, inline=True)
    start = time.perf_counter()
    for n in range(PUBLISHES):
        agent.publish_event("mcp.bench", {"n": n})
    elapsed = time.perf_counter() - start
    hub.close()
    return PUBLISHES / elapsed


def fence_seconds(client: Any) -> float:
    """Seconds per enter + leave of the run fence alone."""
    fence = RunFence(client, SystemClock())
    start = time.perf_counter()
    for _ in range(ACTOR_CALLS):
        fence.leave("bench", fence.enter("bench", HOST))
    return (time.perf_counter() - start) / ACTOR_CALLS


def actor_call_seconds(client: Any, root: Path) -> tuple[float, float]:
    """Seconds per call: through the actor wrapper (registry read, fence), and the
    job alone."""
    jobs = InlineJobs()
    rt = Runtime(client, SystemClock(), Settings(host=HOST), jobs)
    record = AgentRecord(agent_id="bench", workdir=str(root), host=HOST)
    tidings.connect(client=client, settings=Settings(host=HOST)).registry.put(record)

    def job(rt: Runtime, agent: AgentRecord) -> None:
        rt.redis.get("bench:job")

    actor = agent_actor(StubBroker(), rt, "bench_job", job)
    start = time.perf_counter()
    for _ in range(ACTOR_CALLS):
        actor.fn("bench")
    wrapped = (time.perf_counter() - start) / ACTOR_CALLS
    start = time.perf_counter()
    for _ in range(ACTOR_CALLS):
        job(rt, record)
    direct = (time.perf_counter() - start) / ACTOR_CALLS
    return wrapped, direct


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        server = RedisServer(root / "redis").start()
        try:
            failover_client = client_for(RedisConfig.from_url(server.url))
            plain_client = redis.Redis.from_url(server.url, protocol=2)
            plain = publish_rate(plain_client, root, "plain")
            failover = publish_rate(failover_client, root, "failover")
            wrapped, direct = actor_call_seconds(failover_client, root)
            fence = fence_seconds(failover_client)
            failover_client.close()
            plain_client.close()
        finally:
            server.stop()
    print(
        json.dumps(
            {
                "publishes": PUBLISHES,
                "publish_per_s_failover_client": round(failover, 1),
                "publish_per_s_plain_client": round(plain, 1),
                "failover_client_ratio": round(failover / plain, 3),
                "actor_calls": ACTOR_CALLS,
                "actor_call_us_with_fence": round(wrapped * 1e6, 1),
                "job_call_us_direct": round(direct * 1e6, 1),
                "fence_enter_leave_us": round(fence * 1e6, 1),
                "fence_share_of_publish_with_flush": round(fence * failover, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
