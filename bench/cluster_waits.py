"""Asyncio waits on a Redis Cluster: 1,000 ``XREAD BLOCK`` waiters of one event loop on
three primaries, tidings' cluster client beside redis-py's own (issue 25 benchmark).

Each waiter blocks on its agent's wake stream; this process then appends one stamped
entry to every stream at a steady rate. Figures per client: waits that raised, wake
latency (append -> the waiter has it) p50/p99, ``COMMAND GETKEYS`` round trips per wait
(redis-py asks a node for the keys of every ``XREAD``), connections opened per node.
The baseline is ``redis.asyncio.cluster.RedisCluster`` with its defaults (a pool of 100
per node that raises when full). Goals: no failed wait, no ``COMMAND GETKEYS``.

    .venv/bin/python bench/cluster_waits.py [--waiters N] [--rate R]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis
import redis.asyncio.cluster

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _redis import percentile  # noqa: E402

from tests.support.redis_cluster import RedisCluster  # noqa: E402
from tidings.store.async_connection import async_client_for  # noqa: E402
from tidings.store.settings import RedisConfig  # noqa: E402

#: How long a waiter blocks at most (ms); the run is over well before.
BLOCK_MS = 20_000


def node_stats(cluster: RedisCluster) -> tuple[int, int]:
    """``COMMAND GETKEYS`` calls and connections ever accepted, summed over the primaries."""
    getkeys = accepted = 0
    for node in cluster.primaries():
        with node.client() as c:
            stats = c.info("commandstats")
            getkeys += int(stats.get("cmdstat_command|getkeys", {}).get("calls", 0))
            accepted += int(c.info("stats")["total_connections_received"])
    return getkeys, accepted


async def run(
    client: Any, cluster: RedisCluster, waiters: int, rate: float, prefix: str
) -> dict[str, Any]:
    streams = [f"{{a:{prefix}-{n}}}:wake" for n in range(waiters)]
    received: dict[int, float] = {}
    errors: list[str] = []

    async def wait(n: int) -> None:
        try:
            reply = await client.xread({streams[n]: "0-0"}, count=1, block=BLOCK_MS)
        except Exception as exc:  # counted: that is the figure
            errors.append(type(exc).__name__)
            return
        if reply:
            received[n] = time.time() - float(reply[0][1][0][1][b"at"])

    getkeys_before, accepted_before = node_stats(cluster)
    tasks = [asyncio.create_task(wait(n)) for n in range(waiters)]
    await asyncio.sleep(1.0)  # every waiter is blocked (or failed) by now
    writer = redis.cluster.RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port, protocol=2)
    try:
        for n in range(waiters):
            writer.xadd(streams[n], {"at": repr(time.time())})
            await asyncio.sleep(1 / rate)
    finally:
        writer.close()
    await asyncio.wait(tasks, timeout=10)
    for task in tasks:
        task.cancel()
    getkeys_after, accepted_after = node_stats(cluster)
    latencies = [v * 1000 for v in received.values()]
    return {
        "failed_waits": len(errors),
        "errors": sorted(set(errors)),
        "woken": len(received),
        "latency_p50_ms": round(percentile(latencies, 50), 1),
        "latency_p99_ms": round(percentile(latencies, 99), 1),
        "getkeys_per_wait": round((getkeys_after - getkeys_before) / waiters, 2),
        "connections_per_node": round((accepted_after - accepted_before) / 3, 1),
    }


async def both(cluster: RedisCluster, waiters: int, rate: float) -> dict[str, Any]:
    ours = async_client_for(RedisConfig.from_url(cluster.url))
    try:
        tidings_figures = await run(ours, cluster, waiters, rate, "tidings")
    finally:
        await ours.aclose()
    plain = redis.asyncio.cluster.RedisCluster(
        host="127.0.0.1", port=cluster.nodes[0].port, protocol=2
    )
    try:
        baseline = await run(plain, cluster, waiters, rate, "plain")
    finally:
        await plain.aclose()
    return {"tidings": tidings_figures, "baseline_redis_py": baseline}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waiters", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=500.0, help="appends per second")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tidings-bench-cluster-") as tmp:
        cluster = RedisCluster(Path(tmp)).start()
        try:
            figures = asyncio.run(both(cluster, args.waiters, args.rate))
        finally:
            cluster.stop()
    ours, base = figures["tidings"], figures["baseline_redis_py"]
    print(
        json.dumps(
            {
                "benchmark": "cluster_waits",
                "primaries": 3,
                "waiters": args.waiters,
                "rate": args.rate,
                **figures,
                "ratios": {
                    "failed_waits": f"{ours['failed_waits']} vs {base['failed_waits']}",
                    "getkeys_per_wait": f"{ours['getkeys_per_wait']} vs {base['getkeys_per_wait']}",
                    "latency_p99": round(ours["latency_p99_ms"] / base["latency_p99_ms"], 2)
                    if base["latency_p99_ms"]
                    else None,
                },
                "goals": {
                    "no_failed_wait": ours["failed_waits"] == 0,
                    "no_getkeys": ours["getkeys_per_wait"] == 0,
                },
            }
        )
    )


if __name__ == "__main__":
    main()
