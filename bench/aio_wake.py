"""Wake delivery to 1,000 waiting agents: ``tidings.aio`` in one event loop beside the sync
API with one thread per waiter (issue 12 benchmark).

A real redis-server; each side runs in a process of its own (so threads and RSS are its
own) while this process appends wake signals at a steady rate to random agents, each
stamped with its send time. Latency is send -> ``wait_for_wake`` returning it. Goals:
aio p99 <= 100 ms, threads added by the waiters <= 16, RSS <= 1/2 of the threaded run.

    .venv/bin/python bench/aio_wake.py [--agents N] [--rate R] [--seconds S]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

GOAL_P99_MS = 100.0
GOAL_ADDED_THREADS = 16
GOAL_RSS_RATIO = 0.5
#: How long one wait lasts (seconds): an orchestrator's usual long wait; the run ends
#: by cancelling (aio) or abandoning (daemon threads) the waiters.
WAIT_SLICE = 60.0
#: Time for the last signals to reach their waiters after the producer stops (seconds).
SETTLE = 2.0
#: Connections of the threaded side's sync client: one per waiting thread.
SYNC_CONNECTIONS = 5000


def proc_status() -> dict[str, Any]:
    fields = dict(
        line.split(":", 1)
        for line in Path("/proc/self/status").read_text().splitlines()
        if ":" in line
    )
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "threads": int(fields["Threads"]),
        "rss_kb": int(fields["VmRSS"].split()[0]),
        "cpu_s": usage.ru_utime + usage.ru_stime,
    }


def wait_blocked(url: str, count: int) -> None:
    """Until ``count`` clients are blocked in XREAD: every waiter is waiting."""
    import redis

    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 120
    while int(client.info("clients")["blocked_clients"]) < count:
        if time.monotonic() > deadline:
            raise SystemExit("the waiters did not all block")
        time.sleep(0.1)
    client.close()


def agent_ids(count: int) -> list[str]:
    return [f"bench-{n}" for n in range(count)]


# -- the waiting side (a child process) ----------------------------------------------


def received(signal: dict[str, Any] | None, latencies: list[float]) -> None:
    if signal is not None and "sent" in signal:
        latencies.append((time.time() - float(signal["sent"])) * 1000)


async def wait_aio(url: str, base: Path, count: int) -> dict[str, Any]:
    import tidings.aio

    latencies: list[float] = []
    async with tidings.aio.connect(url) as hub:
        agents = [await hub.agent(base / a, agent_id=a) for a in agent_ids(count)]
        before = proc_status()

        async def waiter(agent: tidings.aio.AsyncAgent) -> None:
            while True:
                received(await agent.wait_for_wake(WAIT_SLICE), latencies)

        tasks = [asyncio.create_task(waiter(a)) for a in agents]
        await asyncio.to_thread(wait_blocked, url, count)
        print("ready", flush=True)
        during = await asyncio.to_thread(sys.stdin.readline) and proc_status()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return {"before": before, "during": during, "latencies": latencies}


def wait_threads(url: str, base: Path, count: int) -> dict[str, Any]:
    import redis

    import tidings

    latencies: list[float] = []
    lock = threading.Lock()
    client = redis.Redis.from_url(url, max_connections=SYNC_CONNECTIONS, socket_timeout=30)
    with tidings.connect(client=client) as hub:
        agents = [hub.agent(base / a, agent_id=a) for a in agent_ids(count)]
        before = proc_status()

        def waiter(agent: Any) -> None:
            while True:
                signal = agent.wait_for_wake(WAIT_SLICE)
                with lock:
                    received(signal, latencies)

        threads = [threading.Thread(target=waiter, args=(a,), daemon=True) for a in agents]
        for thread in threads:
            thread.start()
        wait_blocked(url, count)
        print("ready", flush=True)
        sys.stdin.readline()
        during = proc_status()
        with lock:
            return {"before": before, "during": during, "latencies": list(latencies)}


def child(mode: str, url: str, base: Path, count: int) -> None:
    if mode == "aio":
        figures = asyncio.run(wait_aio(url, base, count))
    else:
        figures = wait_threads(url, base, count)
    print(json.dumps(figures), flush=True)
    os._exit(0)  # the threaded side's waiters are still blocked: leave without them


# -- the producing side (this process) ----------------------------------------------------


def produce(url: str, count: int, rate: float, seconds: float) -> int:
    import redis

    from tidings.store.keys import AgentKeys

    client = redis.Redis.from_url(url)
    ids = agent_ids(count)
    interval, sent = 1.0 / rate, 0
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        key = AgentKeys(random.choice(ids)).wake_stream
        entry = json.dumps({"kind": "bench", "sent": time.time()})
        client.xadd(key, {"kind": "bench", "entry": entry}, maxlen=1000, approximate=True)
        sent += 1
        time.sleep(max(0.0, start + sent * interval - time.monotonic()))
    client.close()
    return sent


def run_side(mode: str, url: str, base: Path, args: argparse.Namespace) -> dict[str, Any]:
    side = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--child",
            mode,
            "--url",
            url,
            "--base",
            str(base),
            "--agents",
            str(args.agents),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert side.stdin is not None and side.stdout is not None
    assert side.stdout.readline().strip() == "ready", f"{mode} side did not start"
    sent = produce(url, args.agents, args.rate, args.seconds)
    time.sleep(SETTLE)
    side.stdin.write("stop\n")
    side.stdin.flush()
    figures = json.loads(side.stdout.readline())
    side.wait(120)
    lat = sorted(figures["latencies"])
    return {
        "sent": sent,
        "delivered": len(lat),
        "p50_ms": round(statistics.median(lat), 2),
        "p99_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 2),
        "threads_added": figures["during"]["threads"] - figures["before"]["threads"],
        "threads": figures["during"]["threads"],
        "rss_mb": round(figures["during"]["rss_kb"] / 1024, 1),
        "cpu_ms_per_wake": round(
            (figures["during"]["cpu_s"] - figures["before"]["cpu_s"]) * 1000 / max(len(lat), 1), 3
        ),
        "rss_added_mb": round(
            (figures["during"]["rss_kb"] - figures["before"]["rss_kb"]) / 1024, 1
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--child", choices=("aio", "threads"))
    parser.add_argument("--url")
    parser.add_argument("--base", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.url, args.base, args.agents)
        return

    from _redis import redis_server

    import tidings

    with redis_server() as url, tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        with tidings.connect(url) as hub:
            for agent_id in agent_ids(args.agents):
                (base / agent_id).mkdir()
                hub.agent(base / agent_id, agent_id=agent_id)
        aio = run_side("aio", url, base, args)
        threads = run_side("threads", url, base, args)
    print(
        json.dumps(
            {
                "benchmark": "aio_wake",
                "agents": args.agents,
                "rate_per_s": args.rate,
                "seconds": args.seconds,
                "aio": aio,
                "baseline_threads": threads,
                "rss_ratio": round(aio["rss_mb"] / threads["rss_mb"], 3),
                "rss_added_ratio": round(
                    aio["rss_added_mb"] / max(threads["rss_added_mb"], 0.1), 3
                ),
                "load_average": os.getloadavg()[0],
                "goals": {
                    "p99_ms": GOAL_P99_MS,
                    "threads_added": GOAL_ADDED_THREADS,
                    "rss_ratio": GOAL_RSS_RATIO,
                },
                "met": {
                    "p99": aio["p99_ms"] <= GOAL_P99_MS,
                    "threads": aio["threads_added"] <= GOAL_ADDED_THREADS,
                    "rss": aio["rss_mb"] <= GOAL_RSS_RATIO * threads["rss_mb"],
                },
                "pid": os.getpid(),
            }
        )
    )


if __name__ == "__main__":
    main()
