"""What the attention list costs ``tidings status`` (issue 29): the status read with the
per-agent ``attention`` (two ``EXISTS`` per agent in one pipeline, and a stat of the memory
repository where the workdir is here) beside the same read without it, in the same run.

Prints one JSON object: agents, repeats, and per variant the median wall time and the
Redis time (``INFO commandstats`` usec) of one status read, and the ratios.
``--agents`` sets the fleet (default 5,000 over 10 hosts).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis
from _redis import redis_server

from tidings.inspection import attention
from tidings.inspection.status import status
from tidings.store.clock import SystemClock
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry

#: Status reads per variant (the median is reported).
REPEATS = 7
HOSTS = 10


def redis_usec(client: redis.Redis) -> int:
    return sum(int(v["usec"]) for v in client.info("commandstats").values())


def one(client: redis.Redis, read: Callable[[], object]) -> tuple[float, int]:
    before, started = redis_usec(client), time.perf_counter()
    read()
    return time.perf_counter() - started, redis_usec(client) - before


def summary(samples: list[tuple[float, int]]) -> dict[str, float]:
    return {
        "wall_ms": round(statistics.median(s[0] for s in samples) * 1000, 2),
        "redis_ms": round(statistics.median(s[1] for s in samples) / 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", type=int, default=5_000)
    args = parser.parse_args()
    with redis_server() as url, tempfile.TemporaryDirectory() as tmp:
        client = redis.Redis.from_url(url)
        registry = AgentRegistry(client)
        workdir, memory = Path(tmp) / "w", Path(tmp) / "memory"
        workdir.mkdir()
        (memory / ".git").mkdir(parents=True)
        for n in range(args.agents):
            registry.put(
                AgentRecord(
                    agent_id=f"a{n}",
                    workdir=str(workdir),
                    memory_repo=str(memory),
                    host=f"h{n % HOSTS}",
                )
            )
        clock = SystemClock()
        mark = attention.mark
        with_it: list[tuple[float, int]] = []
        without: list[tuple[float, int]] = []
        status(client, clock)  # warm
        for _ in range(REPEATS):  # alternated, so load on the machine hits both alike
            with_it.append(one(client, lambda: status(client, clock)))
            attention.mark = lambda *a, **k: None  # type: ignore[assignment]
            try:
                without.append(one(client, lambda: status(client, clock)))
            finally:
                attention.mark = mark  # type: ignore[assignment]
        with_attention, baseline = summary(with_it), summary(without)
        client.close()
    print(
        json.dumps(
            {
                "bench": "status_attention",
                "agents": args.agents,
                "repeats": REPEATS,
                "with_attention": with_attention,
                "baseline_without_attention": baseline,
                "ratio_wall": round(with_attention["wall_ms"] / baseline["wall_ms"], 2),
                "ratio_redis": round(with_attention["redis_ms"] / baseline["redis_ms"], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
