"""The default store beside the other two (issue 20 benchmark).

Three stores, one after the other on the same machine:

* ``default``: ``tidings up`` with no URL, its Valkey child with the append-only file on
  (``appendfsync everysec``), in a temporary ``TIDINGS_STATE_DIR``;
* ``plain``: a ``redis-server`` without AOF and ``tidings up --redis-url`` on it (the
  baseline);
* ``embedded``: ``tidings.connect("embedded", background=True)`` (fakeredis in this
  process, with its worker and scheduler).

For each: ``publish_event`` throughput into one channel with a worker of 4 threads and 4
producer threads (events/s to the last one applied), publish → visible-in-file p99 at a
steady 200 events/s, the time from starting ``tidings up`` to its ready line with the
state of 2,000 agents in the store, and the engine's RSS with that state. Each figure is
the median of three rounds in which the stores take turns, so they share the machine's
load alike. The sync tick is slowed to a minute: it is not what is measured. Prints one
JSON object. Goals: the default store within 1.2× of the plain server on each figure;
ready within 2 s.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _redis import _free_port, percentile

THREADS = 4
PRODUCERS = 4
THROUGHPUT_EVENTS = 2000
LATENCY_RATE = 200
LATENCY_SECONDS = 3.0
AGENTS = 2000
#: Each figure is the median of this many rounds, the stores taking turns.
ROUNDS = 3
#: Seconds between sync ticks in every store's processes.
SYNC_INTERVAL = 60.0
GOAL_RATIO = 1.2
GOAL_READY_S = 2.0


def wait_for(condition: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError
        time.sleep(0.002)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


class Up:
    """One ``tidings up`` process; ``ready_s`` is from Popen to its ready line."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tidings",
                "up",
                "--port",
                "0",
                "--threads",
                str(THREADS),
                *args,
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if '"ready"' in line:
                self.ready_s = time.perf_counter() - started
                self.ready = json.loads(line)
                break
        else:
            raise RuntimeError("tidings up did not start")
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def throughput(agent: Any, channel: str) -> float:
    from tidings.jobs.channels.publishing import applied_through

    each = THROUGHPUT_EVENTS // PRODUCERS
    go = threading.Event()

    def produce(offset: int) -> None:
        go.wait()
        for n in range(offset, offset + each):
            agent.publish_event(channel, {"n": n})

    producers = [threading.Thread(target=produce, args=(i * each,)) for i in range(PRODUCERS)]
    for p in producers:
        p.start()
    started = time.perf_counter()
    go.set()
    wait_for(lambda: applied_through(agent.runtime, agent.record, channel) >= THROUGHPUT_EVENTS)
    elapsed = time.perf_counter() - started
    for p in producers:
        p.join()
    return THROUGHPUT_EVENTS / elapsed


def steady_p99(agent: Any, workdir: Path, channel: str) -> float:
    mirror = workdir / ".notification" / f"{channel}.json"
    sent: dict[str, float] = {}
    seen: dict[str, float] = {}
    done = threading.Event()

    def watch() -> None:
        last = None
        while not done.is_set():
            try:
                st = os.stat(mirror)
                if (st.st_ino, st.st_mtime_ns) != last:
                    last = (st.st_ino, st.st_mtime_ns)
                    now = time.perf_counter()
                    for e in json.loads(mirror.read_bytes())["data"]["events"]:
                        seen.setdefault(e["event_id"], now)
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.0005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    total = int(LATENCY_RATE * LATENCY_SECONDS)
    next_at = time.perf_counter()
    for n in range(total):
        now = time.perf_counter()
        if next_at > now:
            time.sleep(next_at - now)
        sent[agent.publish_event(channel, {"n": n})["event_id"]] = max(now, next_at)
        next_at += 1.0 / LATENCY_RATE
    wait_for(lambda: len(seen) >= total, timeout=60)
    done.set()
    watcher.join()
    return round(percentile([(seen[k] - sent[k]) * 1000 for k in sent], 99), 2)


def populate(hub: Any, root: Path) -> None:
    """The state of AGENTS agents: each registered, with an inbox item."""
    for n in range(AGENTS):
        workdir = root / f"a{n}"
        workdir.mkdir(parents=True, exist_ok=True)
        hub.agent(workdir, agent_id=f"agent-{n}").admit("mail", f"letter {n}")


def settings_for(env: dict[str, str]) -> Any:
    import tidings

    return tidings.Settings(
        host=env["TIDINGS_HOST"],
        state_dir=Path(env["TIDINGS_STATE_DIR"]),
        sync_interval=SYNC_INTERVAL,
    )


def environment(tmp: Path, name: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDINGS_")}
    env.update(
        TIDINGS_HOST=f"bench-{name}",
        TIDINGS_STATE_DIR=str(tmp / name / "state"),
        TIDINGS_SYNC_INTERVAL=str(SYNC_INTERVAL),
        PYTHONUNBUFFERED="1",
    )
    return env


@contextmanager
def plain_server(tmp: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not on PATH")
    port = _free_port()
    proc = subprocess.Popen(
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
            str(tmp),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import redis

        client = redis.Redis(port=port)
        wait_for(lambda: _pings(client), timeout=10)
        client.close()
        yield f"redis://127.0.0.1:{port}/0", proc
    finally:
        proc.terminate()
        proc.wait(10)


def _pings(client: Any) -> bool:
    import redis

    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def run(tmp: Path) -> dict[str, dict[str, Any]]:
    """Every figure ROUNDS times, the stores taking turns in each round (they share
    the machine's load alike), medians reported."""
    import tidings

    envs = {name: environment(tmp, name) for name in ("default", "plain", "embedded")}
    figures: dict[str, dict[str, list[float]]] = {
        name: {
            "publish_events_per_s": [],
            "publish_to_visible_p99_ms": [],
            "ready_s_with_state": [],
        }
        for name in envs
    }
    with plain_server(tmp) as (url, server):
        envs["plain"]["TIDINGS_REDIS_URL"] = url
        ups = {"default": Up(envs["default"]), "plain": Up(envs["plain"])}
        hubs = {
            "default": tidings.connect(settings=settings_for(envs["default"])),
            "plain": tidings.connect(url, settings=settings_for(envs["plain"])),
            "embedded": tidings.connect(
                "embedded", background=True, settings=settings_for(envs["embedded"])
            ),
        }
        try:
            for r in range(ROUNDS):
                for name, hub in hubs.items():
                    workdir = tmp / name / f"bench-{r}"
                    workdir.mkdir(parents=True)
                    agent = hub.agent(workdir, max_events={"mcp.steady": 1000})
                    figures[name]["publish_events_per_s"].append(throughput(agent, "mcp.bench"))
                    figures[name]["publish_to_visible_p99_ms"].append(
                        steady_p99(agent, workdir, "mcp.steady")
                    )
            embedded_before = rss_mb(os.getpid())
            for name, hub in hubs.items():
                populate(hub, tmp / name / "agents")
            embedded_rss = rss_mb(os.getpid()) - embedded_before
        finally:
            for hub in hubs.values():
                hub.close()
            for up in ups.values():
                up.stop()
        for _ in range(ROUNDS):  # restarts with the state of AGENTS agents in the store
            for name in ("default", "plain"):
                up = Up(envs[name])
                figures[name]["ready_s_with_state"].append(up.ready_s)
                if name == "default":
                    store = json.loads((tmp / "default" / "state" / "store.json").read_text())
                    default_rss, default_engine = rss_mb(store["pid"]), store["engine"]
                up.stop()
        plain_rss = rss_mb(server.pid)
    results = {
        name: {k: (median(v) if v else None) for k, v in f.items()} for name, f in figures.items()
    }
    results["default"].update(engine_rss_mb=default_rss, engine=f"{default_engine}, AOF everysec")
    results["plain"].update(engine_rss_mb=plain_rss, engine="redis-server, no AOF")
    results["embedded"].update(
        engine_rss_mb=round(embedded_rss, 1),
        engine="fakeredis in this process (nothing survives it)",
        engine_rss_note="growth of this process with the 2,000 agents",
    )
    return results


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tidings-bench-store-") as tmp:
        results = run(Path(tmp))
    default, plain = results["default"], results["plain"]
    ratios = {
        "publish_throughput_plain_over_default": round(
            plain["publish_events_per_s"] / default["publish_events_per_s"], 2
        ),
        "p99_default_over_plain": round(
            default["publish_to_visible_p99_ms"] / plain["publish_to_visible_p99_ms"], 2
        ),
        "ready_default_over_plain": round(
            default["ready_s_with_state"] / plain["ready_s_with_state"], 2
        ),
        "rss_default_over_plain": round(default["engine_rss_mb"] / plain["engine_rss_mb"], 2),
    }
    print(
        json.dumps(
            {
                "benchmark": "default_store",
                "worker_threads": THREADS,
                "producer_threads": PRODUCERS,
                "throughput_events": THROUGHPUT_EVENTS,
                "steady_rate_events_per_s": LATENCY_RATE,
                "agents_in_store": AGENTS,
                "rounds": ROUNDS,
                "stores": results,
                "ratios": ratios,
                "goal_ratio_max": GOAL_RATIO,
                "goal_ready_s": GOAL_READY_S,
                "peak_rss_of_this_process_mb": round(
                    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
                ),
            }
        )
    )


if __name__ == "__main__":
    main()
