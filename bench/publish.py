"""Publish throughput and latency (issue 2 benchmark).

In one run, against one fresh redis-server and worker processes with the same
thread count:

* events/s delivered into one channel by tidings' coalesced path
  (``publish_event`` → buffer → ``flush_channel``), and by a plain dramatiq actor
  that writes the channel file once per event (the baseline);
* publish → visible-in-file latency p50/p99 at a steady 200 events/s;
* the same latency for a ``publish_event`` that finds its worker idle, with the doorbell
  (the default: the enqueue wakes the waiting consumer) beside polling
  (``TIDINGS_WORKER_DOORBELL=false``, ``TIDINGS_WORKER_POLL_MS=20``: the design before
  it), their events interleaved in one run, and each idle worker's CPU.

Prints one JSON object. Goal: coalesced ≥ 10× plain; p99 ≤ 100 ms; the doorbell's idle
latency no worse than polling's, at a fraction of its idle CPU. ``--idle`` measures the
idle figures alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _redis import cpu_seconds, percentile, redis_server

THREADS = 4
THROUGHPUT_EVENTS = 3000
PLAIN_EVENTS = 600
PRODUCERS = 4
LATENCY_RATE = 200
LATENCY_SECONDS = 5.0
HOST = "bench"
#: Idle publishes per design, and the pause before each (s): the worker's queue is
#: empty and its consumer waiting (or polled out to its ceiling) when the event comes.
IDLE_EVENTS = 40
IDLE_GAP_SECONDS = (0.15, 0.35)
#: How long each idle worker's CPU is measured (s).
IDLE_CPU_SECONDS = 10.0
#: The designs of the idle figures: their environments on top of the bench's.
IDLE_DESIGNS = {
    "doorbell": {"TIDINGS_WORKER_DOORBELL": "true"},
    "polling": {"TIDINGS_WORKER_DOORBELL": "false", "TIDINGS_WORKER_POLL_MS": "20"},
}


def plain_worker(url: str) -> None:
    """Baseline worker: one read-modify-write of the file per event."""
    import dramatiq
    from dramatiq import Worker

    from tidings.store import locks
    from tidings.store.connection import client_for
    from tidings.store.files import atomic_write, safe_read
    from tidings.store.jsonfmt import compact
    from tidings.store.settings import RedisConfig, Settings
    from tidings.workers.broker import make_broker

    broker = make_broker(client_for(RedisConfig.from_url(url)), Settings(host=HOST))

    def plain_write(workdir: str, event: dict[str, Any]) -> None:
        root = Path(workdir)
        with locks.hold(root, "channel:plain"):
            outcome = safe_read(root, ".notification/plain.json")
            mirror = json.loads(outcome.data) if outcome.ok else {"data": {"events": []}}
            mirror["data"]["events"] = [*mirror["data"]["events"][-19:], event]
            mirror["applied"] = mirror.get("applied", 0) + 1
            atomic_write(root, ".notification/plain.json", compact(mirror).encode())

    dramatiq.Actor(
        plain_write,
        broker=broker,
        actor_name="plain_write",
        queue_name="bench.plain",
        priority=0,
        options={},
    )
    worker = Worker(broker, queues={"bench.plain"}, worker_threads=THREADS)
    worker.start()
    print(json.dumps({"status": "ready"}), flush=True)
    sys.stdin.read()  # run until the parent closes our stdin
    worker.stop()


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        args,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if '"ready"' in line:
            return proc
    raise RuntimeError(f"{args} did not start")


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.stdin:
        proc.stdin.close()
    proc.terminate()
    proc.wait(30)


def wait_for(condition: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError
        time.sleep(0.005)


def produce(mode: str, url: str, workdir: str, count: int, offset: int) -> None:
    """A producer process: waits for "go" on stdin, then publishes ``count`` events."""
    from dramatiq import Message

    import tidings

    hub = tidings.connect(url, settings=tidings.Settings(host=HOST))
    agent = hub.agent(workdir)
    print(json.dumps({"status": "ready"}), flush=True)
    sys.stdin.readline()
    for n in range(offset, offset + count):
        if mode == "coalesced":
            agent.publish_event("mcp.bench", {"n": n})
        else:
            hub.broker.enqueue(
                Message(
                    queue_name="bench.plain",
                    actor_name="plain_write",
                    args=(workdir, {"n": n}),
                    kwargs={},
                    options={},
                )
            )
    hub.close()


def throughput(
    mode: str,
    url: str,
    workdir: Path,
    total: int,
    delivered: Any,
    env: dict[str, str],
    *,
    backlog: bool,
) -> float:
    """Events/s to the last event applied, with PRODUCERS producer processes.

    ``backlog=False``: timed from "go", producers and workers running together.
    ``backlog=True``: the channel's lock is held while the producers run, so every
    event waits; the clock starts when the lock is released (pure delivery rate).
    """
    from tidings.store import locks

    workdir.mkdir(exist_ok=True)
    scope = "channel:mcp.bench" if mode == "coalesced" else "channel:plain"
    each = total // PRODUCERS
    producers = [
        start(
            [
                sys.executable,
                __file__,
                "--produce",
                mode,
                url,
                str(workdir),
                str(each),
                str(i * each),
            ],
            env,
        )
        for i in range(PRODUCERS)
    ]
    with locks.hold(workdir, scope) if backlog else contextlib.nullcontext():
        started = time.perf_counter()
        for p in producers:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        if backlog:
            for p in producers:
                p.wait(60)
            started = time.perf_counter()
    if backlog and mode == "coalesced":
        # A flush that gave up waiting for the lock (10 s) is retried after dramatiq's
        # back-off; one more flush message makes the figure the drain, not the back-off.
        kick(url, workdir)
    wait_for(lambda: delivered() >= total)
    elapsed = time.perf_counter() - started
    for p in producers:
        p.wait(60)
    return total / elapsed


def kick(url: str, workdir: Path) -> None:
    import tidings

    with tidings.connect(url, settings=tidings.Settings(host=HOST)) as hub:
        agent = hub.agent(workdir)
        agent.runtime.dispatch.flush_channel(agent.record, "mcp.bench")


def coalesced_delivered(url: str, workdir: Path) -> Any:
    import tidings
    from tidings.jobs.channels.publishing import applied_through

    hub = tidings.connect(url, settings=tidings.Settings(host=HOST))
    agent = hub.agent(workdir)
    return lambda: applied_through(agent.runtime, agent.record, "mcp.bench")


def plain_delivered(workdir: Path) -> Any:
    mirror = workdir / ".notification" / "plain.json"

    def applied() -> int:
        try:
            return int(json.loads(mirror.read_bytes()).get("applied", 0))
        except (OSError, ValueError):
            return 0

    return applied


def steady_latency(url: str, workdir: Path) -> dict[str, float]:
    import tidings

    with tidings.connect(url, settings=tidings.Settings(host=HOST)) as hub:
        agent = hub.agent(workdir, max_events={"mcp.steady": 1000})
        sent: dict[str, float] = {}
        seen: dict[str, float] = {}
        mirror = workdir / ".notification" / "mcp.steady.json"
        stop_watch = threading.Event()

        def watch() -> None:
            last = None
            while not stop_watch.is_set():
                try:
                    st = os.stat(mirror)
                    key = (st.st_ino, st.st_mtime_ns)
                    if key != last:
                        last = key
                        now = time.perf_counter()
                        for e in json.loads(mirror.read_bytes())["data"]["events"]:
                            seen.setdefault(e["event_id"], now)
                except (OSError, ValueError, KeyError):
                    pass
                time.sleep(0.0005)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        interval = 1.0 / LATENCY_RATE
        total = int(LATENCY_RATE * LATENCY_SECONDS)
        next_at = time.perf_counter()
        for n in range(total):
            now = time.perf_counter()
            if next_at > now:
                time.sleep(next_at - now)
            event_id = agent.publish_event("mcp.steady", {"n": n})["event_id"]
            sent[event_id] = now if next_at <= now else next_at
            next_at += interval
        wait_for(lambda: len(seen) >= total, timeout=30)
        stop_watch.set()
        watcher.join()
        lat = [(seen[k] - sent[k]) * 1000 for k in sent]
        return {
            "events": total,
            "p50_ms": round(percentile(lat, 50), 2),
            "p99_ms": round(percentile(lat, 99), 2),
            "max_ms": round(max(lat), 2),
        }


def idle_latency(url: str, tmp: Path, env: dict[str, str]) -> dict[str, Any]:
    """Per design: ``publish_event`` → the event in the channel file, each event sent to
    an idle worker (the designs take turns, so both see the same machine), and the
    worker's CPU while nothing happens."""
    import tidings

    workers: dict[str, subprocess.Popen[str]] = {}
    agents: dict[str, Any] = {}
    latencies: dict[str, list[float]] = {design: [] for design in IDLE_DESIGNS}
    with contextlib.ExitStack() as stack:
        for design, extra in IDLE_DESIGNS.items():
            host = f"{HOST}-{design}"
            worker = start(
                [sys.executable, "-m", "tidings", "worker", "--threads", str(THREADS)],
                {**env, "TIDINGS_HOST": host, **extra},
            )
            stack.callback(stop, worker)
            workers[design] = worker
            hub = stack.enter_context(tidings.connect(url, settings=tidings.Settings(host=host)))
            (tmp / design).mkdir()
            agents[design] = hub.agent(tmp / design, max_events={"mcp.idle": 1000})
        time.sleep(1.0)  # start-up work done
        before = {d: cpu_seconds(w.pid) for d, w in workers.items()}
        time.sleep(IDLE_CPU_SECONDS)
        idle_cores = {
            d: round((cpu_seconds(w.pid) - before[d]) / IDLE_CPU_SECONDS, 4)
            for d, w in workers.items()
        }
        order = list(IDLE_DESIGNS)
        for n in range(IDLE_EVENTS):
            random.shuffle(order)
            for design in order:
                time.sleep(random.uniform(*IDLE_GAP_SECONDS))
                mirror = tmp / design / ".notification" / "mcp.idle.json"
                sent = time.perf_counter()
                event_id = agents[design].publish_event("mcp.idle", {"n": n})["event_id"]
                wait_for(lambda m=mirror, e=event_id: in_file(m, e), timeout=10)
                latencies[design].append((time.perf_counter() - sent) * 1000)
    return {
        design: {
            "events": len(lat),
            "p50_ms": round(percentile(lat, 50), 2),
            "p99_ms": round(percentile(lat, 99), 2),
            "max_ms": round(max(lat), 2),
            "worker_idle_cores": idle_cores[design],
        }
        for design, lat in latencies.items()
    }


def in_file(mirror: Path, event_id: str) -> bool:
    try:
        events = json.loads(mirror.read_bytes())["data"]["events"]
    except (OSError, ValueError, KeyError):
        return False
    return any(e.get("event_id") == event_id for e in events)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--plain-worker":
        plain_worker(sys.argv[2])
        return
    if len(sys.argv) == 7 and sys.argv[1] == "--produce":
        produce(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
        return
    with redis_server() as url, tempfile.TemporaryDirectory(prefix="tidings-bench-") as tmp:
        env = {
            **os.environ,
            "TIDINGS_REDIS_URL": url,
            "TIDINGS_HOST": HOST,
            "PYTHONUNBUFFERED": "1",
        }
        if sys.argv[1:] == ["--idle"]:
            idle = idle_latency(url, Path(tmp), env)
            print(
                json.dumps(
                    {"benchmark": "publish", "load_average": os.getloadavg()[0], "idle": idle}
                )
            )
            return
        tidings_worker = start(
            [sys.executable, "-m", "tidings", "worker", "--threads", str(THREADS)], env
        )
        plain = start([sys.executable, __file__, "--plain-worker", url], env)
        for name in ("a", "b", "c", "d", "e"):
            (Path(tmp) / name).mkdir()
        try:
            figures = {}
            for backlog, (a, b) in ((False, ("a", "b")), (True, ("d", "e"))):
                coalesced = throughput(
                    "coalesced",
                    url,
                    Path(tmp) / a,
                    THROUGHPUT_EVENTS,
                    coalesced_delivered(url, Path(tmp) / a),
                    env,
                    backlog=backlog,
                )
                plain_rate = throughput(
                    "plain",
                    url,
                    Path(tmp) / b,
                    PLAIN_EVENTS,
                    plain_delivered(Path(tmp) / b),
                    env,
                    backlog=backlog,
                )
                figures["backlog_drain" if backlog else "live_producers"] = {
                    "coalesced_events_per_s": round(coalesced, 1),
                    "plain_actor_events_per_s": round(plain_rate, 1),
                    "speedup_vs_plain": round(coalesced / plain_rate, 2),
                }
            latency = steady_latency(url, Path(tmp) / "c")
        finally:
            stop(tidings_worker)
            stop(plain)
        idle = idle_latency(url, Path(tmp), env)
    print(
        json.dumps(
            {
                "benchmark": "publish",
                "worker_threads": THREADS,
                "producer_processes": PRODUCERS,
                **figures,
                "goal_speedup": 10,
                "steady_rate_events_per_s": LATENCY_RATE,
                "latency": latency,
                "goal_p99_ms": 100,
                "idle": idle,
                "load_average": os.getloadavg()[0],
            }
        )
    )


if __name__ == "__main__":
    main()
