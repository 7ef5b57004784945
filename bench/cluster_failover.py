"""A cluster primary's failover under a stream of publishes (issue 25 benchmark).

Three primaries with a replica each (``cluster-node-timeout`` 1 s), the broker on a
standalone Redis, a worker in this process and one producer thread per agent calling
``publish_event(..., wait=True)`` every 10 ms. The primary holding the most agents is
SIGKILLed; the cluster promotes its replica. Figures: calls after the kill that did not
answer ok, the slowest call, the longest pause between two acknowledgements (what a
producer sees of the failover), and the same run with redis-py's own cluster retry (a
few immediate attempts, no pause: the baseline). Goal: no failed call, none over 30 s.

    .venv/bin/python bench/cluster_failover.py [--agents N] [--after S]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from redis.backoff import NoBackoff  # noqa: E402
from redis.retry import Retry  # noqa: E402

import tidings  # noqa: E402
from tests.support.redis_cluster import RedisCluster  # noqa: E402
from tests.support.redis_server import RedisServer  # noqa: E402
from tidings.store.cluster import StateCluster  # noqa: E402
from tidings.store.keys import AgentKeys  # noqa: E402
from tidings.store.settings import Settings  # noqa: E402

GOAL_SECONDS = 30.0


def produce(agent: Any, stop: threading.Event, log: list[tuple[float, float, bool]]) -> None:
    n = 0
    while not stop.is_set():
        started = time.monotonic()
        try:
            ok = (
                agent.publish_event("mcp.f", {"n": n}, idempotency_key=f"k{n}", wait=True).get(
                    "status"
                )
                == "ok"
            )
        except Exception:  # counted: that is the figure
            ok = False
        log.append((started, time.monotonic(), ok))
        n += 1
        time.sleep(0.01)


def run(tmp: Path, agents: int, after: float, baseline: bool) -> dict[str, Any]:
    cluster = RedisCluster(tmp / "cluster", replicas=1).start()
    broker = RedisServer(tmp / "broker").start()
    try:
        hub = tidings.connect(cluster.url, broker_url=broker.url, settings=Settings(host="b"))
        if baseline:  # redis-py's own: three immediate attempts
            state: StateCluster = hub.redis  # type: ignore[assignment]
            state.failover_retry = state.retry = Retry(NoBackoff(), 3)
        hub.start_worker(threads=4)
        made = []
        for n in range(agents):
            (tmp / f"w{n}").mkdir()
            made.append(hub.agent(tmp / f"w{n}", max_events={"mcp.f": 10_000}))
        held = {
            port: sum(f"{AgentKeys(a.agent_id).tag}:record" in found for a in made)
            for port, found in cluster.keys_by_node().items()
        }
        victim = next(n for n in cluster.nodes if n.port == max(held, key=held.__getitem__))
        log: list[tuple[float, float, bool]] = []
        stop = threading.Event()
        threads = [threading.Thread(target=produce, args=(a, stop, log), daemon=True) for a in made]
        for thread in threads:
            thread.start()
        time.sleep(2)
        killed = time.monotonic()
        victim.kill()
        time.sleep(after)
        stop.set()
        for thread in threads:
            thread.join(60)
        hub.close()
    finally:
        cluster.stop()
        broker.stop()
    later = [(s, e, ok) for s, e, ok in log if e > killed]
    acks = sorted(e for _, e, ok in log if ok)
    return {
        "agents_on_killed_primary": held[victim.port],
        "calls_after_kill": len(later),
        "failed_calls": sum(1 for _, _, ok in later if not ok),
        "slowest_call_s": round(max((e - s for s, e, _ in later), default=0.0), 2),
        "longest_pause_between_acks_s": round(
            max((b - a for a, b in pairwise(acks)), default=0.0), 2
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=6)
    parser.add_argument("--after", type=float, default=10.0, help="seconds after the kill")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tidings-bench-failover-") as tmp:
        ours = run(Path(tmp) / "tidings", args.agents, args.after, baseline=False)
        base = run(Path(tmp) / "baseline", args.agents, args.after, baseline=True)
    print(
        json.dumps(
            {
                "benchmark": "cluster_failover",
                "primaries": 3,
                "replicas_each": 1,
                "node_timeout_ms": 1000,
                "agents": args.agents,
                "tidings": ours,
                "baseline_redis_py_retry": base,
                "ratios": {"failed_calls": f"{ours['failed_calls']} vs {base['failed_calls']}"},
                "goals": {
                    "no_failed_call": ours["failed_calls"] == 0,
                    "slowest_within_30s": ours["slowest_call_s"] < GOAL_SECONDS,
                },
            }
        )
    )


if __name__ == "__main__":
    main()
