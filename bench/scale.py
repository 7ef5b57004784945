"""Past one Redis (issue 25): round trips and Redis CPU per unit of work, the registry and
``tidings status`` at 100k agents, and throughput on one Redis against three primaries.

One run prints one JSON object:

- ``units``: for ``standalone`` (one Redis: state and control) and ``cluster`` (three
  primaries for state, a standalone Redis for control), per unit — a publish (the public
  call, its flush message enqueued), the flush of one record (as its worker runs it:
  run fence, record read, the job), a woken visit (the sync tick's visit of one changed
  agent) and an inline turn — the round trips (socket writes, by store) and the Redis CPU
  (``used_cpu_user + used_cpu_sys`` over every node), per unit.
- ``registry``: 100k agents over 100 hosts beside ~1M keys (``DEBUG POPULATE``) on one
  Redis: Redis time (``INFO commandstats`` usec) and round trips of ``on_host`` for a host
  of 1,000 agents and of ``tidings status`` (with and without the foreign keys).
- ``throughput``: client threads publishing and flushing as fast as they can, on one Redis
  and on the three primaries; events/s at a saturated Redis (the busiest node) and the ratio.

``--baseline FILE`` adds the figures of another run (e.g. the commit before issue 25, run
with that tree's interpreter and ``--skip-cluster``) and the ratios. ``--agents`` scales
the registry part down for a quick run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis
from _redis import _free_port, wait_for_ping
from redis.connection import AbstractConnection

import tidings
from tidings.jobs.channels.flush import flush_channel

try:
    from tidings.jobs.channels.publishing import append_event
except ImportError:  # the tree before issue 22's renames
    from tidings.jobs.channels.publishing import (  # type: ignore[attr-defined,no-redef]
        publish_event as append_event,
    )
from tidings.jobs.runtime import Runtime

try:
    from tidings.jobs import tick
except ImportError:  # the tree before issue 31's re-cut (before issue 22: jobs/wake/tick.py)
    try:
        from tidings.jobs.wake import sync as tick  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from tidings.jobs.wake import tick  # type: ignore[import-not-found,no-redef]
from tidings.store.clock import SystemClock
from tidings.store.models import AgentRecord
from tidings.store.placement import RunFence
from tidings.store.registry import AgentRegistry
from tidings.store.settings import Settings

HOST = "scale"
#: Repetitions of each unit.
N = 200
#: Client threads and seconds of the throughput part.
LOAD_THREADS = 6
LOAD_SECONDS = 4.0


# -- servers -------------------------------------------------------------------------------


@contextmanager
def servers(count: int, *extra: str) -> Iterator[list[int]]:
    """``count`` fresh non-persistent redis-servers (never the shared one on 6379)."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not on PATH")
    procs, ports = [], []
    with tempfile.TemporaryDirectory(prefix="tidings-scale-") as tmp:
        try:
            for n in range(count):
                port = _free_port()
                d = Path(tmp) / f"n{n}"
                d.mkdir()
                more = [
                    a.replace("{dir}", str(d)).replace("{bus}", str(_free_port())) for a in extra
                ]
                procs.append(
                    subprocess.Popen(
                        [
                            binary,
                            "--port",
                            str(port),
                            "--bind",
                            "127.0.0.1",
                            "--save",
                            "",
                            "--appendonly",
                            "no",
                            "--dir",
                            str(d),
                            "--enable-debug-command",
                            "yes",
                            *more,
                        ],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
                ports.append(port)
            for port in ports:
                wait_for_ping(port)
            yield ports
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(10)


@contextmanager
def cluster() -> Iterator[list[int]]:
    """Three primaries, as the test fixture starts them (tests/support/redis_cluster.py)."""
    with servers(
        3,
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "{dir}/nodes.conf",
        "--cluster-port",
        "{bus}",
        "--cluster-node-timeout",
        "1000",
    ) as ports:
        subprocess.run(
            [
                shutil.which("redis-cli") or "redis-cli",
                "--cluster",
                "create",
                *(f"127.0.0.1:{p}" for p in ports),
                "--cluster-yes",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=60,
        )
        for port in ports:
            client = redis.Redis(port=port)
            while client.cluster("info").get("cluster_state") != "ok":
                time.sleep(0.05)
            client.close()
        yield ports


# -- counting ------------------------------------------------------------------------------


class RoundTrips:
    """Socket writes by server port, counted while :attr:`on` (every client's connections)."""

    def __init__(self) -> None:
        self.by_port: dict[int, int] = {}
        self.on = False
        self._lock = threading.Lock()
        original = AbstractConnection.send_packed_command
        trips = self

        def counted(conn: Any, command: Any, check_health: bool = True) -> None:
            if trips.on:
                with trips._lock:
                    trips.by_port[conn.port] = trips.by_port.get(conn.port, 0) + 1
            original(conn, command, check_health)

        AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]

    def take(self) -> dict[int, int]:
        with self._lock:
            taken, self.by_port = self.by_port, {}
        return taken


def cpu(ports: list[int]) -> list[float]:
    out = []
    for port in ports:
        with redis.Redis(port=port) as c:
            info = c.info("cpu")
        out.append(info["used_cpu_user"] + info["used_cpu_sys"])
    return out


def usec(port: int) -> float:
    """Redis time spent in commands so far (``INFO commandstats``), INFO excluded."""
    with redis.Redis(port=port) as c:
        stats = c.info("commandstats")
    return float(sum(v["usec"] for k, v in stats.items() if k != "cmdstat_info"))


def per_unit(
    trips: RoundTrips, ports: list[int], control: int, runs: list[Callable[[], Any]]
) -> dict[str, Any]:
    """Round trips (state / control) and Redis CPU per call, over the calls of ``runs``."""
    runs[0]()  # warm: scripts loaded, caches filled
    trips.take()
    before = cpu(ports)
    trips.on = True
    for run in runs[1:]:
        run()
    trips.on = False
    after = cpu(ports)
    n = len(runs) - 1
    counted = trips.take()
    ctl = counted.pop(control, 0) if control not in ports or len(ports) > 1 else 0
    state = sum(counted.values())
    return {
        "round_trips": round((state + ctl) / n, 2),
        "state": round(state / n, 2),
        "control": round(ctl / n, 2),
        "redis_cpu_us": round(sum(a - b for a, b in zip(after, before, strict=True)) / n * 1e6, 1),
    }


# -- units ---------------------------------------------------------------------------------


def units(
    trips: RoundTrips, ports: list[int], control: int, hub: Any, root: Path
) -> dict[str, Any]:
    rt: Runtime = hub.runtime
    workdir = root / "w"
    (workdir / ".notification").mkdir(parents=True)
    agent = hub.agent(workdir, agent_id="scale-a", host=HOST)
    record = agent.record
    fence = RunFence(rt.redis, rt.clock)
    registry = AgentRegistry(rt.redis)  # records only: the state store
    seq = [0]

    def publish(channel: str) -> Callable[[], None]:
        def run() -> None:
            seq[0] += 1
            assert agent.publish_event(channel, {"n": seq[0]})["status"] == "ok"

        return run

    def flush(channel: str) -> Callable[[], None]:
        def run() -> None:  # what the worker's actor runs for a flush_channel message
            if hasattr(fence, "enter_reading"):  # one round trip since issue 25
                token, raw = fence.enter_reading(record.agent_id, HOST)
                found = AgentRecord.model_validate_json(raw)
            else:
                token = fence.enter(record.agent_id, HOST)
                found = registry.get(record.agent_id)
            assert found is not None
            flush_channel(rt, found, channel)
            fence.leave(record.agent_id, token)

        return run

    def visit() -> None:
        seq[0] += 1
        (workdir / ".notification" / "mcp.c0.json").write_text(
            json.dumps({"header": "y", "data": {"n": seq[0]}})
        )
        tick.sync_host(rt, HOST, [record.agent_id])

    out: dict[str, Any] = {}
    # one channel per publish: each is the first of its batch, so each enqueues its flush
    channels = [f"mcp.c{n}" for n in range(N + 1)]
    out["publish"] = per_unit(trips, ports, control, [publish(c) for c in channels])
    out["flush_of_1_record"] = per_unit(trips, ports, control, [flush(c) for c in channels])
    out["woken_visit"] = per_unit(trips, ports, control, [visit] * 21)
    (root / "t").mkdir()
    inline = hub.agent(root / "t", agent_id="scale-t", host=HOST, inline=True)

    def turn() -> None:
        t = inline.prepare_turn()
        assert isinstance(t, tidings.Turn), t
        inline.finish_turn(t)

    out["inline_turn"] = per_unit(trips, ports, control, [turn] * 21)
    out["redis_cpu_us_per_event_that_wakes"] = round(
        out["publish"]["redis_cpu_us"]
        + out["flush_of_1_record"]["redis_cpu_us"]
        + out["woken_visit"]["redis_cpu_us"],
        1,
    )
    return out


# -- registry at scale ----------------------------------------------------------------------


def fill(client: redis.Redis, agents: int, hosts: int, root: str) -> None:
    records = [
        AgentRecord(agent_id=f"r{n:06d}", workdir=f"{root}/r{n:06d}", host=f"host{n % hosts:03d}")
        for n in range(agents)
    ]
    registry = AgentRegistry(client)
    if hasattr(registry, "put_many"):
        registry.put_many(records)
    else:  # the layout before issue 25: one hash
        for start in range(0, agents, 5000):
            with client.pipeline(transaction=False) as pipe:
                for record in records[start : start + 5000]:
                    pipe.hset("tidings:agents", record.agent_id, record.model_dump_json())
                pipe.execute()


def timed(trips: RoundTrips, port: int, run: Callable[[], Any], n: int) -> dict[str, Any]:
    run()
    trips.take()
    before, started = usec(port), time.perf_counter()
    trips.on = True
    for _ in range(n):
        run()
    trips.on = False
    wall = (time.perf_counter() - started) / n
    return {
        "redis_ms": round((usec(port) - before) / n / 1000, 3),
        "wall_ms": round(wall * 1000, 1),
        "round_trips": round(sum(trips.take().values()) / n, 1),
    }


def top_commands(port: int, run: Callable[[], Any]) -> dict[str, Any]:
    """The commands one call issues, with their Redis time (``INFO commandstats`` delta)."""
    with redis.Redis(port=port) as c:
        c.config_resetstat()
        run()
        stats = c.info("commandstats")
    found = {
        k.removeprefix("cmdstat_"): {"calls": v["calls"], "usec": v["usec"]}
        for k, v in stats.items()
        if k not in ("cmdstat_info", "cmdstat_config|resetstat")
    }
    return dict(sorted(found.items(), key=lambda kv: -kv[1]["usec"])[:8])


def registry_part(trips: RoundTrips, agents: int, hosts: int) -> dict[str, Any]:
    try:
        from tidings.inspection.status import status
    except ImportError:  # the tree before issue 22's renames
        from tidings._status import status  # type: ignore[no-redef]

    out: dict[str, Any] = {"agents": agents, "hosts": hosts}
    with servers(1) as (port,):
        client = redis.Redis(port=port)
        fill(client, agents, hosts, "/nonexistent")
        registry = AgentRegistry(client)
        host = "host007"
        out["agents_on_host"] = len(registry.on_host(host))
        out["on_host"] = timed(trips, port, lambda: registry.on_host(host), 20)
        out["status_without_foreign_keys"] = timed(
            trips, port, lambda: status(client, SystemClock()), 2
        )
        foreign = 1_000_000 - int(client.dbsize())
        client.execute_command("DEBUG", "POPULATE", foreign, "other-app")
        out["keys"] = int(client.dbsize())
        time.sleep(3)  # let the keyspace's incremental rehash finish: steady state
        out["on_host_beside_1m_keys"] = timed(trips, port, lambda: registry.on_host(host), 20)
        out["status_beside_1m_keys"] = timed(trips, port, lambda: status(client, SystemClock()), 2)
        out["status_commands"] = top_commands(port, lambda: status(client, SystemClock()))
        client.close()
    return out


# -- throughput ----------------------------------------------------------------------------


class _Recording:
    deferred = False

    def flush_channel(self, agent: AgentRecord, channel: str) -> None:
        pass

    def alarm_request(self, host: str, request: dict[str, Any]) -> None:
        raise AssertionError

    def expire_delay(self, agent: AgentRecord, request_id: str) -> None:
        raise AssertionError


def throughput(make_client: Callable[[], Any], ports: list[int], root: Path) -> dict[str, Any]:
    """LOAD_THREADS threads publish and flush every 10th record on their own agents."""
    stop = threading.Event()
    done = [0] * LOAD_THREADS

    def load(i: int) -> None:
        client = make_client()
        rt = Runtime(client, SystemClock(), Settings(host=HOST), _Recording())
        n = 0
        agents = []
        for k in range(16):  # agents spread over the slots (and so the primaries)
            d = root / f"load{i}-{k}"
            (d / ".notification").mkdir(parents=True, exist_ok=True)
            agents.append(AgentRecord(agent_id=f"load{i}-{k}", workdir=str(d), host=HOST))
        while not stop.is_set():
            n += 1
            agent = agents[n % len(agents)]
            append_event(rt, agent, "mcp.load", {"n": n})
            if n % 10 == 0:
                for a in agents:
                    flush_channel(rt, a, "mcp.load")
        done[i] = n
        flush_rates()
        client.close()

    before = cpu(ports)
    threads = [threading.Thread(target=load, args=(i,)) for i in range(LOAD_THREADS)]
    started = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(LOAD_SECONDS)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    busy = [(a - b) / elapsed for a, b in zip(cpu(ports), before, strict=True)]
    events = sum(done) / elapsed
    return {
        "events_per_s": round(events),
        "redis_busy_per_node": [round(b, 3) for b in busy],
        "events_per_s_at_saturation": round(events / max(busy)) if max(busy) else None,
    }


def flush_rates() -> None:
    try:
        from tidings.store.rates import flush_all
    except ImportError:  # the tree before issue 25 wrote each count at once
        return
    flush_all()


# -- main ----------------------------------------------------------------------------------


def standalone_units(trips: RoundTrips, root: Path) -> dict[str, Any]:
    with servers(1) as (port,):
        url = f"redis://127.0.0.1:{port}/0"
        with tidings.connect(url, settings=Settings(host=HOST, redis_url=url)) as hub:
            out = units(trips, [port], port, hub, root)
        out["throughput"] = throughput(lambda: redis.Redis(port=port), [port], root / "tp")
    return out


def cluster_units(trips: RoundTrips, root: Path) -> dict[str, Any]:
    from redis.cluster import RedisCluster

    with cluster() as ports, servers(1) as (control,):
        url = "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in ports)
        broker = f"redis://127.0.0.1:{control}/0"
        settings = Settings(host=HOST, redis_url=url)
        with tidings.connect(url, broker_url=broker, settings=settings) as hub:  # type: ignore[call-arg]
            out = units(trips, [*ports, control], control, hub, root)
        out["throughput"] = throughput(
            lambda: RedisCluster(host="127.0.0.1", port=ports[0], protocol=2), ports, root / "tp"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--skip-cluster", action="store_true")
    parser.add_argument("--baseline", type=Path)
    args = parser.parse_args()
    trips = RoundTrips()
    out: dict[str, Any] = {"bench": "scale", "units_n": N}
    with tempfile.TemporaryDirectory() as tmp:
        out["standalone"] = standalone_units(trips, Path(tmp) / "s")
        if not args.skip_cluster:
            out["cluster"] = cluster_units(trips, Path(tmp) / "c")
            out["throughput_ratio_cluster_to_one"] = round(
                out["cluster"]["throughput"]["events_per_s_at_saturation"]
                / out["standalone"]["throughput"]["events_per_s_at_saturation"],
                2,
            )
    out["registry"] = registry_part(trips, args.agents, args.hosts)
    if args.baseline is not None:
        base = json.loads(args.baseline.read_text())
        out["baseline"] = base
        out["ratios"] = {
            "on_host_redis_ms": _ratio(base, out, "on_host_beside_1m_keys"),
            "status_redis_ms": _ratio(base, out, "status_beside_1m_keys"),
        }
    print(json.dumps(out))


def _ratio(base: dict[str, Any], now: dict[str, Any], name: str) -> float | None:
    old, new = base["registry"][name]["redis_ms"], now["registry"][name]["redis_ms"]
    return round(old / new, 1) if new else None


if __name__ == "__main__":
    sys.exit(main())
