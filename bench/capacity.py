"""Redis cost of each unit of work, for the capacity model in deploy/README.md.

On a real redis-server, each operation runs N times between two readings of the
server's own counters (``INFO commandstats``, ``total_net_input_bytes`` /
``total_net_output_bytes``, ``used_cpu_user + used_cpu_sys``); the figures are per
operation. Redis runs commands on one thread, so the server CPU seconds per event
give the events per second one Redis sustains with this command mix (at 100 % of
one core); a run with several client threads checks the extrapolation.

Prints one JSON object.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2
import redis
from _redis import redis_server

import tidings
from tidings.jobs import tick
from tidings.jobs.channels.flush import flush_channel
from tidings.jobs.channels.publishing import append_event
from tidings.jobs.runtime import Runtime
from tidings.store.clock import SystemClock
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry
from tidings.store.settings import Settings

HOST = "cap"
N = 300
AGENTS = 100
CHANNELS = 20
REPO_FILES = 1000
LOAD_SECONDS = 5.0
LOAD_THREADS = 4


class _Recording:
    """Flushes are run by the benchmark itself, when it measures them."""

    deferred = False

    def __init__(self) -> None:
        self.flushes: list[tuple[str, str]] = []

    def flush_channel(self, agent: AgentRecord, channel: str) -> None:
        self.flushes.append((agent.agent_id, channel))

    def alarm_request(self, host: str, request: dict[str, Any]) -> None:
        raise AssertionError("no alarms here")

    def expire_delay(self, agent: AgentRecord, request_id: str) -> None:
        raise AssertionError("no delays here")


def counters(client: redis.Redis) -> dict[str, float]:
    info = client.info("all")
    calls = sum(v["calls"] for k, v in info.items() if k.startswith("cmdstat_"))
    return {
        "commands": calls,
        "in": info["total_net_input_bytes"],
        "out": info["total_net_output_bytes"],
        "cpu": info["used_cpu_user"] + info["used_cpu_sys"],
    }


def per_op(client: redis.Redis, action: Callable[[], object], n: int) -> dict[str, float]:
    action()  # warm: scripts loaded, caches filled
    before = counters(client)
    for _ in range(n):
        action()
    after = counters(client)
    return {
        "commands": round((after["commands"] - before["commands"] - 1) / n, 2),
        "bytes_in": round((after["in"] - before["in"]) / n),
        "bytes_out": round((after["out"] - before["out"]) / n),
        "redis_cpu_us": round((after["cpu"] - before["cpu"]) / n * 1e6, 1),
    }


def make_agents(rt: Runtime, root: Path) -> list[AgentRecord]:
    records = []
    for n in range(AGENTS):
        d = root / f"agent{n}" / ".notification"
        d.mkdir(parents=True)
        for c in range(CHANNELS):
            (d / f"mcp.c{c}.json").write_text(json.dumps({"header": "x", "data": {"n": c}}))
        record = AgentRecord(agent_id=f"c{n:03d}", workdir=str(d.parent), host=HOST)
        AgentRegistry(rt.redis).put(record)
        records.append(record)
    tick.sync_host(rt, HOST)
    return records


def make_repo(path: Path) -> None:
    repo = pygit2.init_repository(str(path), initial_head="main")
    for n in range(REPO_FILES):
        target = path / f"d{n % 20:02d}" / f"note-{n:04d}.md"
        target.parent.mkdir(exist_ok=True)
        target.write_text(f"note {n}\n")
    past = time.time() - 60
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            os.utime(os.path.join(root, name), (past, past))
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("bench", "bench@example.invalid")
    repo.create_commit("HEAD", sig, sig, "notes", repo.index.write_tree(), [])


def main() -> None:
    out: dict[str, Any] = {"bench": "capacity", "n": N, "channels_per_agent": CHANNELS}
    with redis_server() as url, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        client = redis.Redis.from_url(url)
        jobs = _Recording()
        rt = Runtime(client, SystemClock(), Settings(host=HOST), jobs)
        records = make_agents(rt, root)
        one = records[0]
        seq = [0]

        def publish() -> None:
            seq[0] += 1
            assert append_event(rt, one, "mcp.news", {"n": seq[0]})["status"] == "ok"

        out["publish_event"] = per_op(client, publish, N)
        jobs.flushes.clear()

        def publish_then_flush(batch: int) -> Callable[[], None]:
            def run() -> None:
                for _ in range(batch):
                    publish()
                flush_channel(rt, one, "mcp.news")

            return run

        flush_1 = per_op(client, publish_then_flush(1), N)
        flush_100 = per_op(client, publish_then_flush(100), N // 30)
        pub = out["publish_event"]
        out["flush_of_1_record"] = {k: round(flush_1[k] - pub[k], 2) for k in pub}
        out["flush_of_100_records"] = {k: round(flush_100[k] - 100 * pub[k], 2) for k in pub}
        ids = [r.agent_id for r in records]
        visit = per_op(client, lambda: tick.sync_host(rt, HOST, ids), 10)
        out["tick_visit_quiet_agent"] = {k: round(v / AGENTS, 2) for k, v in visit.items()}

        def changed_visit() -> None:
            seq[0] += 1
            for r in records:
                (r.root / ".notification" / "mcp.c0.json").write_text(
                    json.dumps({"header": "y", "data": {"n": seq[0]}})
                )
            tick.sync_host(rt, HOST, ids)

        visit = per_op(client, changed_visit, 5)
        out["tick_visit_woken_agent"] = {k: round(v / AGENTS, 2) for k, v in visit.items()}
        quiet_tick = per_op(client, lambda: None, 1)  # the INFO calls themselves
        out["info_overhead"] = quiet_tick

        make_repo(root / "memory")
        (root / "wd").mkdir()
        settings = Settings(host=HOST, redis_url=url)
        with tidings.connect(url, settings=settings) as hub:
            agent = hub.agent(root / "wd", memory_repo=root / "memory", inline=True)
            agent.startup()
            out["memory_observation"] = per_op(client, agent.observe_memory, 50)

            def turn() -> None:
                t = agent.prepare_turn()
                assert isinstance(t, tidings.Turn), t
                agent.finish_turn(t)

            out["turn"] = per_op(client, turn, 50)
        out["sustained"] = sustained(url, records)
        client.close()
    event = out["publish_event"]["redis_cpu_us"] + out["flush_of_100_records"]["redis_cpu_us"] / 100
    woken = event + out["tick_visit_woken_agent"]["redis_cpu_us"]
    out["model"] = {
        "redis_cpu_us_per_event_batched": round(event, 1),
        "events_per_s_one_redis_core_batched": round(1e6 / event),
        "redis_cpu_us_per_event_flushed_alone_and_woken": round(
            out["publish_event"]["redis_cpu_us"]
            + out["flush_of_1_record"]["redis_cpu_us"]
            + out["tick_visit_woken_agent"]["redis_cpu_us"],
            1,
        ),
        "events_per_s_one_redis_core_each_flushed_and_woken": round(
            1e6 / max(woken + out["flush_of_1_record"]["redis_cpu_us"], 1)
        ),
    }
    print(json.dumps(out))


def sustained(url: str, records: list[AgentRecord]) -> dict[str, Any]:
    """LOAD_THREADS clients publish (and flush every 20th) as fast as they can."""
    stop = threading.Event()
    done = [0] * LOAD_THREADS

    def load(i: int) -> None:
        client = redis.Redis.from_url(url)
        rt = Runtime(client, SystemClock(), Settings(host=HOST), _Recording())
        agent = records[i]
        n = 0
        while not stop.is_set():
            n += 1
            append_event(rt, agent, "mcp.load", {"n": n})
            if n % 20 == 0:
                flush_channel(rt, agent, "mcp.load")
        done[i] = n
        client.close()

    probe = redis.Redis.from_url(url)
    before = counters(probe)
    threads = [threading.Thread(target=load, args=(i,)) for i in range(LOAD_THREADS)]
    started = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(LOAD_SECONDS)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    after = counters(probe)
    probe.close()
    events = sum(done)
    busy = (after["cpu"] - before["cpu"]) / elapsed
    return {
        "client_threads": LOAD_THREADS,
        "events_per_s": round(events / elapsed),
        "redis_cpu_busy_fraction": round(busy, 3),
        "commands_per_s": round((after["commands"] - before["commands"]) / elapsed),
        "events_per_s_at_full_redis_core": round(events / elapsed / busy) if busy else None,
    }


if __name__ == "__main__":
    main()
