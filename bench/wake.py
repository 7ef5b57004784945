"""Publish -> wake with prompt visits (channels.md C27; issue 33), beside the tick alone.

Real ``tidings worker`` and ``tidings scheduler`` processes on a real redis-server,
run twice over the same workdirs in one run: with prompt visits (the design now)
and with ``TIDINGS_PROMPT_VISITS=false`` (the design of ``bea3012``: only the 1 s
sync tick visits agents). For each host size (default 2,000 and 10,000 agents of
20 channels each) and each design it prints:

- ``wake_ms``: an outside producer's atomic write (temp + rename) to a random agent
  at 200 changes/s, to the wake signal's append (the entry id is Redis' clock in ms,
  the write time this process' clock: one machine). Goal p99 ≤ 100 ms with prompt
  visits, at both sizes;
- ``quiet_cores``: CPU of worker + scheduler while nothing changes, between full
  scans, and ``with_backstop_cores`` adding one full scan every 30 s (measured once
  per design). Goal ≤ 0.10 core at 2,000 agents, unchanged or better;
- ``cpu_ms_per_change``: the two processes' CPU during the 200/s run, less the quiet
  rate, per change. Goal: the prompt path's ≤ the tick's. Both are taken in the steady
  state: before it, every agent is written once and visited by the design under test
  (``warm_s``), as a long-running host's visits find it. A process' first visit of an
  agent reads and hashes every channel file and loads its hook registry (the content
  hashes, registries and listings are cached per process): ~0.2 ms more at 20
  channels. The tick's worker gets that from the full scan before the measurement; the
  prompt path's scheduler, which visits in its own process, otherwise paid it on two
  thirds of the measured changes (2,000 agents, 3,000 writes);
- ``burst``: 1,000 back-to-back writes to one agent: how long they took, the visits
  they caused and the wakes. Goal ≤ 1 visit per debounce window (+1).

The scheduler's full scan is slowed to 300 s while measuring, so that no scan falls in
a window; ``full_scan_cpu_s`` is measured on its own.

``python bench/wake.py [--agents 2000 10000] [--seconds 15] [--rate 200]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import redis
from _redis import cpu_seconds, percentile, redis_server

from tidings.jobs.channels.allowlisting import Allowlist
from tidings.jobs.consumer import wake_mask
from tidings.jobs.consumer.read import fingerprint
from tidings.store import keys
from tidings.store.jsonfmt import compact
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry
from tidings.store.settings import Settings
from tidings.workers.broker import make_broker
from tidings.workers.dispatch import send
from tidings.workers.routing import host_queue

CHANNELS = 20
GOAL_P99_MS = 100.0
GOAL_QUIET_CORES = 0.10
BURST_WRITES = 1000
DEBOUNCE_MS = 10.0
#: The backstop the quiet figure is amortised over (TIDINGS_FULL_SCAN_SECONDS default).
BACKSTOP_SECONDS = 30.0
QUIET_SECONDS = float(os.environ.get("BENCH_QUIET_SECONDS", "10"))
#: Writes/s of the pass that brings every agent into the steady state before measuring.
WARM_RATE = 1000.0
#: The content number of the warm pass' first write (the measured pass' start at 0).
WARM_FIRST = 10**7


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build(client: Any, root: Path, host: str, agents: int) -> list[AgentRecord]:
    """Workdirs of hard-linked channel files, registered, their fingerprints committed
    (the first full scan then finds nothing new)."""
    templates = [root / f"template{c}.json" for c in range(CHANNELS)]
    for c, template in enumerate(templates):
        template.write_text(json.dumps({"header": "1 item", "data": {"n": c}}))
    records = []
    for n in range(agents):
        d = root / f"agent{n}" / ".notification"
        d.mkdir(parents=True)
        for c in range(CHANNELS):
            os.link(templates[c], d / f"mcp.c{c}.json")
        records.append(AgentRecord(agent_id=f"w{n:05d}", workdir=str(d.parent), host=host))
    raw = fingerprint(records[0].root, Allowlist(), None)
    masked = compact(wake_mask.masked_fingerprint(records[0].root, raw, None))
    pipe = client.pipeline(transaction=False)
    for record in records:
        k = AgentKeys(record.agent_id)
        pipe.set(k.delivered_fp, compact(raw))
        pipe.set(k.wake_fp, masked)
    pipe.execute()
    AgentRegistry(client).put_many(records)
    return records


def write(record: AgentRecord, n: int) -> None:
    """An outside producer's write: temp file + rename."""
    d = record.root / ".notification"
    temp = d / f".c0.{threading.get_ident()}.tmp"
    temp.write_text(json.dumps({"header": "news", "data": {"n": n}}))
    os.replace(temp, d / "mcp.c0.json")


class Processes:
    """One ``tidings worker`` and one ``tidings scheduler`` of a design."""

    def __init__(self, env: dict[str, str]) -> None:
        self.ports = {"worker": free_port(), "scheduler": free_port()}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        for role in ("worker", "scheduler"):
            self.procs[role] = subprocess.Popen(
                [sys.executable, "-m", "tidings", role],
                env={**env, "TIDINGS_METRICS_PORT": str(self.ports[role])},
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        self._wait("worker", "ready")
        self._wait("scheduler", "leader")

    def _wait(self, role: str, status: str) -> None:
        out = self.procs[role].stdout
        assert out is not None
        for raw in iter(out.readline, b""):
            try:
                if json.loads(raw).get("status") == status:
                    threading.Thread(target=lambda: [None for _ in out], daemon=True).start()
                    return
            except ValueError:
                continue
        raise SystemExit(f"tidings {role} exited before it was {status}")

    def cpu(self) -> float:
        return sum(cpu_seconds(p.pid) for p in self.procs.values())

    def worker_cpu(self) -> float:
        return cpu_seconds(self.procs["worker"].pid)

    def visited(self, role: str, scan: str) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ports[role]}/metrics") as r:
            text = r.read().decode()
        found = re.search(rf'tidings_sync_agents_visited_total{{scan="{scan}"}} (\S+)', text)
        return float(found.group(1)) if found else 0.0

    def close(self) -> None:
        for proc in self.procs.values():
            proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def last_id(client: Any, agent_id: str) -> str:
    newest = client.xrevrange(AgentKeys(agent_id).wake_stream, count=1)
    return newest[0][0].decode() if newest else "0-0"


def first_wake_ms(client: Any, agent_id: str, after: str) -> float | None:
    entries = client.xrange(AgentKeys(agent_id).wake_stream, f"({after}", "+", count=1)
    return float(entries[0][0].decode().split("-")[0]) if entries else None


def wait_full_scan(client: Any, broker: Any, host: str) -> None:
    """Run one full scan now and wait for its end (the tick's marker, cleared at the end)."""
    marker = keys.sync_running(host)
    deadline = time.monotonic() + 600
    while not client.set(marker, "1", nx=True, ex=600):
        if time.monotonic() > deadline:
            raise SystemExit("a full scan never ended")
        time.sleep(0.1)
    send(broker, "sync_host", host_queue(host), host)
    while client.exists(marker):
        if time.monotonic() > deadline:
            raise SystemExit("the full scan never ended")
        time.sleep(0.05)


def latency(
    client: Any,
    records: list[AgentRecord],
    rate: float,
    seconds: float,
    settle: float,
    first: int = 0,
) -> tuple[list[float], int, int]:
    """Writes at ``rate`` to agents in a random order (each at most once per run, or
    once per pass); returns the wake latencies (ms), the writes and the missing wakes.
    Write ``n`` carries ``first + n``: content never written before, so every write is
    a change."""
    order = records[:]
    random.shuffle(order)
    changes: list[tuple[str, str, float]] = []
    started = time.monotonic()
    n = 0
    while True:
        due = started + n / rate
        now = time.monotonic()
        if due - started >= seconds:
            break
        if due > now:
            time.sleep(due - now)
        record = order[n % len(order)]
        before = last_id(client, record.agent_id)
        written = time.time() * 1000
        write(record, first + n)
        changes.append((record.agent_id, before, written))
        n += 1
    time.sleep(settle)
    waits, missing = [], 0
    for agent_id, before, written in changes:
        woke = first_wake_ms(client, agent_id, before)
        if woke is None:
            missing += 1
        else:
            waits.append(woke - written)
    return waits, n, missing


def quiescent(procs: Processes, role: str, scan: str) -> float:
    """Wait until the run's backlog is visited (the visit count holds still for 2 s)."""
    count, still_since = procs.visited(role, scan), time.monotonic()
    give_up = still_since + 60
    while time.monotonic() - still_since < 2 and time.monotonic() < give_up:
        time.sleep(0.25)
        now = procs.visited(role, scan)
        if now != count:
            count, still_since = now, time.monotonic()
    return count


def started_up(procs: Processes, agents: int) -> None:
    """Wait until the scheduler's first full scan has visited every agent and no visit
    of any kind has run for 2 s."""
    give_up = time.monotonic() + 600
    counters = [("worker", "full"), ("worker", "changed"), ("scheduler", "prompt")]
    last, still_since = None, time.monotonic()
    while time.monotonic() < give_up:
        now = [procs.visited(role, scan) for role, scan in counters]
        if now != last:
            last, still_since = now, time.monotonic()
        elif now[0] >= agents and time.monotonic() - still_since >= 2:
            return
        time.sleep(0.25)
    raise SystemExit("the scheduler's first full scan never ended")


def summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "p50": round(percentile(values, 50), 1),
        "p99": round(percentile(values, 99), 1),
        "max": round(max(values), 1),
    }


def run_design(
    url: str, records: list[AgentRecord], host: str, prompt: bool, args: argparse.Namespace
) -> dict[str, Any]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TIDINGS_")},
        "TIDINGS_REDIS_URL": url,
        "TIDINGS_HOST": host,
        "TIDINGS_SYNC_INTERVAL": "1",
        "TIDINGS_FULL_SCAN_SECONDS": "300",
        "TIDINGS_LOG_LEVEL": "WARNING",
        "TIDINGS_VISIT_DEBOUNCE_MS": str(DEBOUNCE_MS),
        "TIDINGS_PROMPT_VISITS": "true" if prompt else "false",
    }
    client = redis.Redis.from_url(url, protocol=2)
    settings = Settings(host=host, redis_url=url)
    broker = make_broker(client, settings)
    procs = Processes(env)
    try:
        # The scheduler's own first full scan and its visits of newly watched agents
        # come first, so that none of them falls in a measured window.
        started_up(procs, len(records))
        before = procs.worker_cpu()
        wait_full_scan(client, broker, host)
        full_scan_cpu = procs.worker_cpu() - before
        time.sleep(1)
        before, at = procs.cpu(), time.monotonic()
        time.sleep(QUIET_SECONDS)
        quiet = (procs.cpu() - before) / (time.monotonic() - at)
        settle = 1.0 if prompt else 3.0
        role, scan = ("scheduler", "prompt") if prompt else ("worker", "changed")
        # The steady state: every agent written once and visited by this design.
        warm_s = len(records) / WARM_RATE
        latency(client, records, WARM_RATE, warm_s, settle, first=WARM_FIRST)
        quiescent(procs, role, scan)
        before, at = procs.cpu(), time.monotonic()
        waits, writes, missing = latency(client, records, args.rate, args.seconds, settle)
        busy = procs.cpu() - before - quiet * (time.monotonic() - at)
        target = records[0]
        visits_before = quiescent(procs, role, scan)
        wakes_before = client.xlen(AgentKeys(target.agent_id).wake_stream)
        burst_started = time.monotonic()
        for n in range(BURST_WRITES):
            write(target, 10**6 + n)
        burst_seconds = time.monotonic() - burst_started
        time.sleep(settle)
        visits = procs.visited(role, scan) - visits_before
        wakes = client.xlen(AgentKeys(target.agent_id).wake_stream) - wakes_before
        windows = burst_seconds * 1000 / DEBOUNCE_MS + 1
        return {
            "wake_ms": summary(waits),
            "writes": writes,
            "missing_wakes": missing,
            "quiet_cores": round(quiet, 4),
            "full_scan_cpu_s": round(full_scan_cpu, 2),
            "with_backstop_cores": round(quiet + full_scan_cpu / BACKSTOP_SECONDS, 4),
            "cpu_ms_per_change": round(busy * 1000 / max(1, writes), 2),
            "warm_s": round(warm_s, 1),
            "burst": {
                "writes": BURST_WRITES,
                "seconds": round(burst_seconds, 3),
                "visits": int(visits),
                "wakes": int(wakes),
                "debounce_windows": round(windows, 1),
                "within_one_visit_per_window": visits <= windows,
            },
        }
    finally:
        procs.close()
        broker.close()
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument(
        "--baseline", action="store_true", help="only the tick alone (prompt visits off)"
    )
    args = parser.parse_args()
    out: dict[str, Any] = {
        "benchmark": "wake",
        "rate_per_s": args.rate,
        "seconds": args.seconds,
        "channels": CHANNELS,
        "debounce_ms": DEBOUNCE_MS,
        "goal_p99_ms": GOAL_P99_MS,
        "goal_quiet_cores": GOAL_QUIET_CORES,
        "load_average": os.getloadavg()[0],
        "sizes": {},
    }
    for agents in args.agents:
        with redis_server() as url, tempfile.TemporaryDirectory(prefix="tidings-wake-") as tmp:
            host = f"wake-{agents}"
            client = redis.Redis.from_url(url, protocol=2)
            records = build(client, Path(tmp), host, agents)
            client.close()
            size: dict[str, Any] = {}
            if not args.baseline:
                size["prompt"] = run_design(url, records, host, True, args)
            size["baseline_tick_only"] = run_design(url, records, host, False, args)
            if "prompt" in size:
                p, b = size["prompt"], size["baseline_tick_only"]
                size["goals"] = {
                    "p99_le_100ms": bool(p["wake_ms"])
                    and p["wake_ms"]["p99"] <= GOAL_P99_MS
                    and p["missing_wakes"] == 0,
                    "quiet_le_baseline_or_goal": p["with_backstop_cores"]
                    <= max(GOAL_QUIET_CORES, b["with_backstop_cores"]),
                    "cpu_per_change_le_tick": p["cpu_ms_per_change"] <= b["cpu_ms_per_change"],
                    "burst_coalesced": p["burst"]["within_one_visit_per_window"],
                }
            out["sizes"][str(agents)] = size
    print(json.dumps(out))


if __name__ == "__main__":
    main()
