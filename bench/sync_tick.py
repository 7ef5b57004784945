"""Cost of the sync tick (channels.md C27) on a large host, on a real redis-server.

Prints one JSON object. The watcher design (inotify decides which agents a tick
visits; a full scan every ``TIDINGS_FULL_SCAN_SECONDS``) runs beside today's design
(every tick a full scan — what ``--force-full-scan`` or a platform without inotify
gets) in the same run, over the same workdirs:

- host tick with every agent quiet (goal ≤ 50 ms);
- host tick with 100 agents changed, against a tick over those 100 alone (goal ≤ 2×);
- wake latency p50/p99 at 200 changes/s spread over all agents (goal p99 ≤ 1.5 ×
  the interval), scheduler tick, worker threads and writer in one process, with how
  long each full scan in that window took (a full scan steps aside while a changed
  tick runs, so it takes longer; it must stay well within ``TIDINGS_FULL_SCAN_SECONDS``);
- RSS per registered agent of the tick process (goal ≤ 10 KB).

``blocked_flood`` (channels.md C50, issue 11 acceptance 3): a quiet tick over an
agent with 1,500 unregistered channel files beside the same tick over 100, after
their warnings went out; the goal is a ratio of at most 2.

``python bench/sync_tick.py [--agents 10000] [--channels 20] [--force-full-scan]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import redis
from _redis import percentile, redis_server

from tidings.jobs import tick
from tidings.jobs.channels.flush import flush_channel
from tidings.jobs.consumer import visit
from tidings.jobs.runtime import Runtime
from tidings.scheduler.sync_tick import SyncTicker
from tidings.scheduler.watcher import Watcher
from tidings.store.clock import SystemClock
from tidings.store.listing import RACY_SECONDS
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry
from tidings.store.settings import Settings

HOST = "bench"
INTERVAL = 1.0
CHANGED = 100
RATE = 200.0
LATENCY_SECONDS = float(os.environ.get("BENCH_LATENCY_SECONDS", "35"))
TODAY_LATENCY_SECONDS = float(os.environ.get("BENCH_TODAY_LATENCY_SECONDS", "15"))
ROUNDS = 7
#: C50: rogue files in the flooded workdir and in its in-run baseline.
FLOOD_ROGUES = 1500
BASELINE_ROGUES = 100
FLOOD_ROUNDS = 30


class _Inline:
    runtime: Runtime
    deferred = False

    def flush_channel(self, agent: AgentRecord, channel: str) -> None:
        flush_channel(self.runtime, agent, channel)

    def alarm_request(self, host: str, request: dict[str, Any]) -> None:
        raise AssertionError("no alarms here")

    def expire_delay(self, agent: AgentRecord, request_id: str) -> None:
        raise AssertionError("no delays here")


def rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def build(rt: Runtime, root: Path, agents: int, channels: int) -> list[AgentRecord]:
    """Workdirs with ``channels`` files each (hard links of one template per channel: fast
    to make, read like separate files) and one registry write per 1,000 agents."""
    templates = [root / f"template{c}.json" for c in range(channels)]  # ext4: 65,000 links
    for c, template in enumerate(templates):
        template.write_text(json.dumps({"header": "1 item", "data": {"n": c}}))
    records = []
    for n in range(agents):
        d = root / f"agent{n}" / ".notification"
        d.mkdir(parents=True)
        for c in range(channels):
            os.link(templates[c], d / f"mcp.c{c}.json")
        record = AgentRecord(agent_id=f"a{n:05d}", workdir=str(d.parent), host=HOST)
        records.append(record)
    AgentRegistry(rt.redis).put_many(records)
    return records


def change(record: AgentRecord, n: int) -> None:
    """An outside producer's write: temp file + rename."""
    d = record.root / ".notification"
    temp = d / ".c0.tmp"
    temp.write_text(json.dumps({"header": "news", "data": {"n": n}}))
    os.replace(temp, d / "mcp.c0.json")


def timed_ms(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


class Host:
    """A ticker whose messages run ``sync_host`` inline (or on worker threads)."""

    def __init__(
        self,
        rt: Runtime,
        watcher: Watcher | None,
        full_scan_seconds: float,
        pool: ThreadPoolExecutor | None = None,
    ) -> None:
        self.rt, self.pool = rt, pool
        self.ticker = SyncTicker(rt.redis, HOST, INTERVAL, full_scan_seconds, self.send, watcher)

        #: Seconds each full scan took (it steps aside while changed ticks run).
        self.full_scans_s: list[float] = []

    def send(self, agent_ids: Sequence[str] | None) -> None:
        if self.pool is None:
            tick.sync_host(self.rt, HOST, agent_ids)
        elif agent_ids is None:
            self.pool.submit(self._timed_full_scan)
        else:
            self.pool.submit(tick.sync_host, self.rt, HOST, agent_ids)

    def _timed_full_scan(self) -> None:
        started = time.perf_counter()
        tick.sync_host(self.rt, HOST)
        self.full_scans_s.append(round(time.perf_counter() - started, 1))


def wait_changes(watcher: Watcher, count: int) -> None:
    deadline = time.monotonic() + 30
    while len(watcher._changed) < count and time.monotonic() < deadline:
        time.sleep(0.01)


def hundred_changed(
    rt: Runtime,
    host: Host,
    watcher: Watcher | None,
    records: list[AgentRecord],
    counter: list[int],
    rounds: int = ROUNDS,
) -> dict[str, float]:
    """Median tick over the host with 100 agents changed, and over those 100 alone."""
    picked = random.Random(7).sample(records, CHANGED)
    ids = [r.agent_id for r in picked]
    host_ms, alone_ms = [], []
    for _ in range(rounds):
        for r in picked:
            counter[0] += 1
            change(r, counter[0])
        if watcher is not None:
            wait_changes(watcher, CHANGED)
        host_ms.append(timed_ms(host.ticker.tick))
        for r in picked:
            counter[0] += 1
            change(r, counter[0])
        alone_ms.append(timed_ms(lambda: tick.sync_host(rt, HOST, ids)))
        if watcher is not None:  # the alone tick's events are not the next round's
            wait_changes(watcher, CHANGED)
            watcher.take()
    return {
        "host_ms": round(statistics.median(host_ms), 1),
        "alone_ms": round(statistics.median(alone_ms), 1),
    }


def latency(
    rt: Runtime,
    watcher: Watcher | None,
    records: list[AgentRecord],
    seconds: float,
    counter: list[int],
    full_scan_seconds: float,
) -> dict[str, Any]:
    """Writes at RATE/s to random agents; seconds from each write to its wake signal."""
    written: dict[str, float] = {}
    samples: list[float] = []
    lock = threading.Lock()
    real = visit.sync_agent

    def observed(rt_: Runtime, agent: AgentRecord) -> dict[str, Any]:
        outcome = real(rt_, agent)
        if outcome.get("woke"):
            with lock:
                at = written.pop(agent.agent_id, None)
            if at is not None:
                samples.append(time.monotonic() - at)
        return outcome

    visit.sync_agent = observed  # type: ignore[assignment]
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=2) as pool:  # full scan beside changed ticks
        host = Host(rt, watcher, full_scan_seconds, pool)
        host.ticker._last_full = time.monotonic()  # the initial scan ran already

        def ticks() -> None:
            next_at = time.monotonic()
            while not stop.is_set():
                host.ticker.tick()
                next_at += INTERVAL
                stop.wait(max(0.0, next_at - time.monotonic()))

        ticker = threading.Thread(target=ticks)
        ticker.start()
        rng = random.Random(11)
        started = time.monotonic()
        writes = 0
        while time.monotonic() - started < seconds:
            record = rng.choice(records)
            counter[0] += 1
            with lock:
                written.setdefault(record.agent_id, time.monotonic())
            change(record, counter[0])
            writes += 1
            delay = started + writes / RATE - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        time.sleep(3 * INTERVAL)  # the last writes' ticks
        stop.set()
        ticker.join()
    visit.sync_agent = real  # type: ignore[assignment]
    return {
        "writes": writes,
        "woken": len(samples),
        "unwoken": len(written),
        "p50_s": round(percentile(samples, 50), 3),
        "p99_s": round(percentile(samples, 99), 3),
        "max_s": round(max(samples, default=float("nan")), 3),
        "full_scans_s": host.full_scans_s,
    }


def _rogue_agent(rt: Runtime, root: Path, rogues: int, channels: int) -> AgentRecord:
    d = root / f"rogue{rogues}" / ".notification"
    d.mkdir(parents=True)
    for c in range(channels):
        (d / f"mcp.c{c}.json").write_text(json.dumps({"header": f"c{c}", "data": {"n": c}}))
    for n in range(rogues):
        (d / f"rogue{n}.json").write_text("{}")
    record = AgentRecord(agent_id=f"rogue{rogues}", workdir=str(d.parent), host=HOST)
    AgentRegistry(rt.redis).put(record)
    for _ in range(3):  # warnings out, flushed, and delivered: from now on quiet ticks
        visit.sync_agent(rt, record)
    return record


def _flood(rt: Runtime, root: Path, channels: int) -> dict[str, Any]:
    """C50: a quiet tick over 1,500 rogue files against one over 100."""
    baseline = _rogue_agent(rt, root, BASELINE_ROGUES, channels)
    flooded = _rogue_agent(rt, root, FLOOD_ROGUES, channels)
    # planted earlier: listings of just-changed directories are not reused
    time.sleep(RACY_SECONDS + 0.5)
    base, flood = [], []
    for _ in range(FLOOD_ROUNDS):  # interleaved, so a busy machine slows both alike
        base.append(timed_ms(lambda: visit.sync_agent(rt, baseline)))
        flood.append(timed_ms(lambda: visit.sync_agent(rt, flooded)))
    base_ms, flood_ms = statistics.median(base), statistics.median(flood)
    return {
        "rogue_files": FLOOD_ROGUES,
        "baseline_rogue_files": BASELINE_ROGUES,
        "tick_ms": round(flood_ms, 3),
        "baseline_tick_ms": round(base_ms, 3),
        "ratio": round(flood_ms / base_ms, 2),
        "goal_ratio": 2.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--channels", type=int, default=20)
    parser.add_argument(
        "--force-full-scan", action="store_true", help="only today's design: every tick a full scan"
    )
    args = parser.parse_args()
    out: dict[str, Any] = {
        "bench": "sync_tick",
        "agents": args.agents,
        "channels_per_agent": args.channels,
        "interval_s": INTERVAL,
    }
    counter = [0]
    with redis_server() as url, tempfile.TemporaryDirectory() as tmp:
        client = redis.Redis.from_url(url)
        jobs = _Inline()
        rt = Runtime(client, SystemClock(), Settings(host=HOST), jobs)
        jobs.runtime = rt
        started = time.perf_counter()
        records = build(rt, Path(tmp), args.agents, args.channels)
        out["setup_s"] = round(time.perf_counter() - started, 1)
        rss_before = rss_kb()
        first = timed_ms(lambda: tick.sync_host(rt, HOST))  # every agent wakes once
        today: dict[str, Any] = {"first_full_scan_ms": round(first)}
        quiet = [timed_ms(lambda: tick.sync_host(rt, HOST)) for _ in range(2)]
        today["quiet_host_tick_ms"] = round(statistics.median(quiet), 1)
        rss_today = rss_kb()
        today_host = Host(rt, None, 30.0)
        today["hundred_changed"] = hundred_changed(rt, today_host, None, records, counter, rounds=2)
        today["latency_200_per_s"] = latency(
            rt, None, records, TODAY_LATENCY_SECONDS, counter, 30.0
        )
        out["today_full_scan_every_tick"] = today
        if not args.force_full_scan:
            out["watcher"] = watched(rt, records, counter, rss_today)
        out["rss"] = {
            "before_ticks_kb": rss_before,
            "after_full_scans_kb": rss_today,
            "full_scan_caches_per_agent_kb": round((rss_today - rss_before) / args.agents, 2),
        }
        out["blocked_flood"] = _flood(rt, Path(tmp), args.channels)
        client.close()
    ratios: dict[str, Any] = {}
    if "watcher" in out:
        w, t = out["watcher"], out["today_full_scan_every_tick"]
        ratios = {
            "quiet_tick_over_goal_50ms": round(w["quiet_host_tick_ms"] / 50, 3),
            "quiet_tick_over_today": round(w["quiet_host_tick_ms"] / t["quiet_host_tick_ms"], 4),
            "hundred_changed_over_alone": round(
                w["hundred_changed"]["host_ms"] / w["hundred_changed"]["alone_ms"], 2
            ),
            "today_hundred_changed_over_alone": round(
                t["hundred_changed"]["host_ms"] / t["hundred_changed"]["alone_ms"], 2
            ),
            "latency_p99_over_interval": round(w["latency_200_per_s"]["p99_s"] / INTERVAL, 2),
            "today_latency_p99_over_interval": round(t["latency_200_per_s"]["p99_s"] / INTERVAL, 2),
            "rss_per_agent_kb": w["rss_per_agent_kb"],
        }
    out["ratios"] = ratios
    print(json.dumps(out))


def watched(
    rt: Runtime, records: list[AgentRecord], counter: list[int], rss_start: int
) -> dict[str, Any]:
    """The new design over the same host."""
    before = rss_kb()
    watcher = Watcher()
    try:
        host = Host(rt, watcher, 1e9)
        started = time.perf_counter()
        first = host.ticker.tick()  # registers every agent (watches) + the full scan
        out: dict[str, Any] = {
            "register_and_first_tick_ms": round((time.perf_counter() - started) * 1000),
            "watches": watcher.watches,
            "first_tick_full": first["full"],
        }
        watcher.take()
        quiet = [timed_ms(host.ticker.tick) for _ in range(20)]
        out["quiet_host_tick_ms"] = round(statistics.median(quiet), 3)
        out["quiet_host_tick_max_ms"] = round(max(quiet), 3)
        rss_after = rss_kb()
        out["rss_per_agent_kb"] = round((rss_after - before) / len(records), 2)
        out["hundred_changed"] = hundred_changed(rt, host, watcher, records, counter)
        full = 30.0
        out["latency_200_per_s"] = latency(rt, watcher, records, LATENCY_SECONDS, counter, full)
        out["latency_window_includes_a_full_scan"] = full < LATENCY_SECONDS
    finally:
        watcher.close()
    del rss_start
    return out


if __name__ == "__main__":
    sys.exit(main())
