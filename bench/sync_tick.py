"""Cost of the sync tick (channels.md C27) against its own coherent read.

Prints one JSON object: per-agent tick times for a quiet agent (nothing
changed), for an agent with one changed channel (wake signal appended), and a
whole-host tick, each with the in-run baseline of a bare coherent read of the
same workdir (the part of a tick every agent pays).

``blocked_flood`` (channels.md C50, issue 11 acceptance 3): a quiet tick over an
agent with 1,500 unregistered channel files beside the same tick over 100, after
their warnings went out; the goal is a ratio of at most 2.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import fakeredis

from tidings.jobs.channels.flush import flush_channel
from tidings.jobs.runtime import Runtime
from tidings.jobs.view.read import coherent_read
from tidings.jobs.wake.tick import sync_agent, sync_host
from tidings.store.clock import SystemClock
from tidings.store.listing import RACY_SECONDS
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry
from tidings.store.settings import Settings

CHANNELS = 20
AGENTS = 50
ROUNDS = 30
#: C50: rogue files in the flooded workdir and in its in-run baseline.
FLOOD_ROGUES = 1500
BASELINE_ROGUES = 100


class _Inline:
    """Flushes run in the caller; nothing else is dispatched in this benchmark."""

    runtime: Runtime

    def flush_channel(self, agent: AgentRecord, channel: str) -> None:
        flush_channel(self.runtime, agent, channel)

    def alarm_request(self, host: str, request: dict[str, Any]) -> None:
        raise AssertionError("no alarms here")

    def expire_delay(self, agent: AgentRecord, request_id: str) -> None:
        raise AssertionError("no delays here")


def _timed(fn: Any, rounds: int = ROUNDS) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(samples), 3)


def _agent(rt: Runtime, root: Path, n: int) -> AgentRecord:
    workdir = root / f"agent{n}"
    d = workdir / ".notification"
    d.mkdir(parents=True)
    for c in range(CHANNELS):
        (d / f"mcp.c{c}.json").write_text(json.dumps({"header": f"c{c}", "data": {"n": c}}))
    record = AgentRecord(agent_id=f"a{n}", workdir=str(workdir), host="bench")
    AgentRegistry(rt.redis).put(record)
    return record


def _rogue_agent(rt: Runtime, root: Path, rogues: int) -> AgentRecord:
    record = _agent(rt, root, 1000 + rogues)
    d = record.root / ".notification"
    for n in range(rogues):
        (d / f"rogue{n}.json").write_text("{}")
    for _ in range(3):  # warnings out, flushed, and delivered: from now on quiet ticks
        sync_agent(rt, record)
    return record


def _flood(rt: Runtime, root: Path) -> dict[str, Any]:
    """C50: a quiet tick over 1,500 rogue files against one over 100."""
    baseline = _rogue_agent(rt, root, BASELINE_ROGUES)
    flooded = _rogue_agent(rt, root, FLOOD_ROGUES)
    time.sleep(RACY_SECONDS)  # planted earlier: listings of just-changed directories are not reused
    base_ms = _timed(lambda: sync_agent(rt, baseline))
    flood_ms = _timed(lambda: sync_agent(rt, flooded))
    return {"rogue_files": FLOOD_ROGUES, "baseline_rogue_files": BASELINE_ROGUES,
            "tick_ms": flood_ms, "baseline_tick_ms": base_ms,
            "ratio": round(flood_ms / base_ms, 2), "goal_ratio": 2.0}


def main() -> None:
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer(), version=(7,))
    jobs = _Inline()
    rt = Runtime(client, SystemClock(), Settings(host="bench"), jobs)
    jobs.runtime = rt
    with tempfile.TemporaryDirectory() as tmp:
        agents = [_agent(rt, Path(tmp), n) for n in range(AGENTS)]
        one = agents[0]
        sync_host(rt, "bench")  # first tick: every agent wakes once
        read_ms = _timed(lambda: coherent_read(rt, one))
        quiet_ms = _timed(lambda: sync_agent(rt, one))
        counter = {"n": 0}
        target = one.root / ".notification" / "mcp.c0.json"

        def changed() -> None:
            counter["n"] += 1
            target.write_text(json.dumps({"header": "c0", "data": {"n": counter["n"]}}))
            assert sync_agent(rt, one)["woke"]

        changed_ms = _timed(changed)
        host_ms = _timed(lambda: sync_host(rt, "bench"), rounds=5)
        flood = _flood(rt, Path(tmp))
    client.close()
    print(json.dumps({
        "bench": "sync_tick",
        "channels_per_agent": CHANNELS,
        "agents_per_host": AGENTS,
        "coherent_read_ms": read_ms,
        "quiet_tick_ms": quiet_ms,
        "changed_tick_ms": changed_ms,
        "host_tick_ms": host_ms,
        "ratios": {
            "quiet_tick_over_read": round(quiet_ms / read_ms, 2),
            "changed_tick_over_read": round(changed_ms / read_ms, 2),
            "host_tick_over_agents_x_quiet": round(host_ms / (AGENTS * quiet_ms), 2),
        },
        "blocked_flood": flood,
    }))


if __name__ == "__main__":
    main()
