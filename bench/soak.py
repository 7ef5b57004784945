"""Soak of the default store (issue 30 acceptance 7), beside its own first minutes.

``tidings up`` with no URL (its Valkey child, AOF everysec) in a temporary state
directory serves 50 agents; 8 producer threads publish into them at a steady total rate
for ``--minutes`` (default 10), round-robin over :data:`CHANNELS` channels of each
agent (a fixed set: the state a soak adds is events, not channels or agents, so what
grows is what the processes keep, not what they are given to keep).

Each channel file keeps its newest :data:`RETAINED` events (``--retained``), a size
its files reach before the baseline minute: what a file holds then stays the same, so
RSS measures what the processes keep, not files that are still growing.

Every minute it samples the RSS of ``tidings up`` and of the engine, and the agents'
wake streams (C26: ≈ 1,000 entries each, a bounded part of the engine's memory that
fills for longer than a soak). At the end it waits for the worker to drain and reads
every channel file: ``delivered`` counts the acknowledged events found (of those the
files ought to hold, ``checked``), ``lost`` those missing, ``duplicated`` the extra
copies. The baseline is the run's own minute 2 (after warm-up): ``rss_ratio`` is the
last minute's RSS over it, the goal is within 1 ± 0.1. Prints one JSON object.

    .venv/bin/python bench/soak.py --minutes 3 --rate 250
    .venv/bin/python bench/soak.py --retained 10000   # count every event; files grow
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _redis import percentile

from tidings.store.keys import AgentKeys
from tidings.workers.routing import host_queue

AGENTS = 50
PRODUCERS = 8
#: Worker threads of ``tidings up``.
THREADS = 4
#: Total publishes per second, spread over the producers.
RATE = 500.0
CHANNELS = 8
#: Events each channel file retains by default: at RATE the files reach this size in
#: ~80 s, before the baseline minute, so the soak measures the processes in their steady
#: state. At :data:`FULL_COUNT` (C12's ceiling) 10 minutes leave ~750 events in each
#: file and every acknowledged event stays countable, but the files grow for the whole
#: soak and so does ``tidings up``'s working set (issue 30: not a leak).
RETAINED = 100
FULL_COUNT = 10_000
#: With ``--retained`` below FULL_COUNT: how much later than a file's oldest event an
#: acknowledged event must be minted to be expected in it (milliseconds).
RETENTION_MARGIN_MS = 2_000
#: The minute whose RSS is the baseline (1-based): after warm-up.
BASELINE_MINUTE = 2
#: How long the worker may take to apply what is buffered at the end (seconds).
DRAIN_SECONDS = 300.0
#: Goal: RSS after the baseline minute within this fraction of it.
GOAL_RSS_BAND = 0.10
SYNC_INTERVAL = 60.0
HOST = "bench-soak"


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return float("nan")


class Up:
    """``tidings up`` on the default store; its ready line and its engine's pid."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tidings", "up", "--port", "0", "--threads", str(THREADS)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        for line in self.proc.stdout:
            if '"ready"' in line:
                break
        else:
            raise RuntimeError(f"tidings up did not start: {self.proc.stderr.read()[-2000:]}")
        self.stderr: list[str] = []
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        threading.Thread(
            target=lambda: self.stderr.extend(self.proc.stderr or ()), daemon=True
        ).start()
        state = Path(env["TIDINGS_STATE_DIR"])
        self.engine_pid = int(json.loads((state / "store.json").read_text())["pid"])

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(60)


class Producers:
    """PRODUCERS threads publishing round-robin over the agents at ``rate`` in total."""

    def __init__(self, agents: list[Any], rate: float, channels: int) -> None:
        self.agents = agents
        self.channels = channels
        self.interval = PRODUCERS / rate
        self.stop = threading.Event()
        self.acked: list[tuple[int, str, str]] = []  # (agent index, channel, event id)
        self.latencies: list[float] = []
        self.errors: dict[str, int] = {}
        self._lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(PRODUCERS)
        ]

    def _run(self, offset: int) -> None:
        n = offset
        next_at = time.perf_counter()
        while not self.stop.is_set():
            now = time.perf_counter()
            if next_at > now:
                time.sleep(next_at - now)
            next_at = max(next_at + self.interval, time.perf_counter() - 1.0)
            index = n % len(self.agents)
            channel = f"mcp.soak{(n // len(self.agents)) % self.channels}"
            sent = time.perf_counter()
            try:
                result = self.agents[index].publish_event(channel, {"n": n})
                reason = None if result.get("status") == "ok" else str(result.get("reason"))
            except Exception as exc:  # counted, never fatal: the soak goes on
                reason, result = type(exc).__name__, {}
            elapsed = (time.perf_counter() - sent) * 1000
            with self._lock:
                if reason is None:
                    self.acked.append((index, channel, str(result["event_id"])))
                    self.latencies.append(elapsed)
                else:
                    self.errors[reason] = self.errors.get(reason, 0) + 1
            n += PRODUCERS

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def join(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)


def sample(minute: int, up: Up, hub: Any, agents: list[Any], acked: int) -> dict[str, Any]:
    """RSS of both processes, and what is still to do: the engine's dataset (buffered
    events live there until flushed) and the flush messages waiting on the host queue.
    A backlog that grows means the machine cannot keep up with the rate, which grows
    both processes without any leak. ``wake_mb``: the agents' wake streams, a bounded
    part of the dataset that fills for longer than a soak (C26: ≈ 1,000 entries each)."""
    engine = hub.redis.info("memory")
    streams = [AgentKeys(agent.agent_id).wake_stream for agent in agents]
    wake = sum(int(hub.redis.memory_usage(key, samples=0) or 0) for key in streams)
    entries = sum(int(hub.redis.xlen(key)) for key in streams)
    return {
        "minute": minute,
        "up_mb": rss_mb(up.proc.pid),
        "engine_mb": rss_mb(up.engine_pid),
        "engine_dataset_mb": round(int(engine["used_memory"]) / 2**20, 1),
        "wake_mb": round(wake / 2**20, 1),
        "wake_entries_per_agent": round(entries / max(1, len(streams))),
        "queued": int(hub.redis.hlen(f"tidings:{host_queue(HOST)}.msgs")),
        "acked": acked,
    }


def delivered(workdirs: list[Path]) -> dict[tuple[int, str], list[str]]:
    """Every event id in every soak channel file, per (agent index, channel)."""
    found: dict[tuple[int, str], list[str]] = {}
    for index, workdir in enumerate(workdirs):
        for path in (workdir / ".notification").glob("mcp.soak*.json"):
            try:
                events = json.loads(path.read_bytes())["data"]["events"]
            except (OSError, ValueError, KeyError):
                continue
            found[(index, path.name[: -len(".json")])] = [e["event_id"] for e in events]
    return found


def minted_ms(event_id: str) -> int:
    """When the publishing client minted ``evt_<ms hex>_<rand>`` (milliseconds)."""
    return int(event_id.split("_")[1], 16)


def tally(acked: list[tuple[int, str, str]], workdirs: list[Path], retained: int) -> dict[str, int]:
    """Acknowledged events found, missing and found twice. Below :data:`FULL_COUNT` a
    file drops its oldest events on purpose (C12): an acknowledged event counts as lost
    only if it was minted :data:`RETENTION_MARGIN_MS` after the oldest event its file
    still holds (the producers' threads mint ids a moment before the engine orders them)."""
    files = delivered(workdirs)
    present = {(i, c, e) for (i, c), ids in files.items() for e in ids}
    total = sum(len(ids) for ids in files.values())
    oldest = {place: min(map(minted_ms, ids)) for place, ids in files.items() if ids}

    def expected(item: tuple[int, str, str]) -> bool:
        if retained >= FULL_COUNT:
            return True
        first = oldest.get(item[:2])
        return first is None or minted_ms(item[2]) > first + RETENTION_MARGIN_MS

    checked = [item for item in acked if expected(item)]
    lost = sum(1 for item in checked if item not in present)
    return {
        "acked": len(acked),
        "checked": len(checked),
        "delivered": len(checked) - lost,
        "lost": lost,
        "duplicated": total - len(present),
        "in_files": total,
    }


def soak(minutes: float, rate: float, channels: int, retained: int) -> dict[str, Any]:
    import tidings

    with tempfile.TemporaryDirectory(prefix="tidings-soak-") as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TIDINGS_")}
        env.update(
            TIDINGS_HOST=HOST,
            TIDINGS_STATE_DIR=str(root / "state"),
            TIDINGS_SYNC_INTERVAL=str(SYNC_INTERVAL),
            PYTHONUNBUFFERED="1",
        )
        up = Up(env)
        settings = tidings.Settings(
            host=HOST, state_dir=root / "state", sync_interval=SYNC_INTERVAL
        )
        try:
            with tidings.connect(settings=settings) as hub:
                workdirs = [root / f"agent{n}" for n in range(AGENTS)]
                caps = {f"mcp.soak{c}": retained for c in range(channels)}
                agents = []
                for workdir in workdirs:
                    workdir.mkdir()
                    agents.append(hub.agent(workdir, max_events=caps))
                samples = [sample(0, up, hub, agents, 0)]
                started = time.monotonic()
                producers = Producers(agents, rate, channels)
                producers.start()
                for minute in range(1, int(minutes) + 1):
                    time.sleep(max(0.0, started + minute * 60 - time.monotonic()))
                    samples.append(sample(minute, up, hub, agents, len(producers.acked)))
                    print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
                producers.join()
                elapsed = time.monotonic() - started
                drain_started = time.monotonic()
                counts = tally(producers.acked, workdirs, retained)
                while counts["lost"] and time.monotonic() - drain_started < DRAIN_SECONDS:
                    time.sleep(2.0)
                    counts = tally(producers.acked, workdirs, retained)
                drain_s = time.monotonic() - drain_started
                idle = {"up_mb": rss_mb(up.proc.pid), "engine_mb": rss_mb(up.engine_pid)}
        finally:
            code = up.stop()
    base = samples[min(BASELINE_MINUTE, len(samples) - 1)]
    last = samples[-1]
    up_ratio = round(last["up_mb"] / base["up_mb"], 3)
    engine_ratio = round(last["engine_mb"] / base["engine_mb"], 3)
    return {
        "bench": "soak",
        "agents": AGENTS,
        "channels_per_agent": channels,
        "producers": PRODUCERS,
        "threads": THREADS,
        "minutes": minutes,
        "rate_goal": rate,
        "retained": retained,
        "rate": round(counts["acked"] / elapsed, 1),
        "rss_per_minute": samples,
        "rss_after_drain": idle,
        "baseline": f"minute {base['minute']} of this run",
        "up_rss_ratio": up_ratio,
        "engine_rss_ratio": engine_ratio,
        **counts,
        "publish_errors": producers.errors,
        "publish_p50_ms": round(percentile(producers.latencies, 50), 2),
        "publish_p99_ms": round(percentile(producers.latencies, 99), 2),
        "drain_s": round(drain_s, 1),
        "up_exit": code,
        "up_stderr_tail": up.stderr[-3:],
        "goal": {"rss_band": GOAL_RSS_BAND, "lost": 0, "duplicated": 0},
        "goal_met": (
            abs(up_ratio - 1) <= GOAL_RSS_BAND
            and abs(engine_ratio - 1) <= GOAL_RSS_BAND
            and counts["lost"] == 0
            and counts["duplicated"] == 0
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=RATE, help="publishes per second")
    parser.add_argument("--channels", type=int, default=CHANNELS, help="channels per agent")
    parser.add_argument(
        "--retained",
        type=int,
        default=RETAINED,
        help=f"events each channel file retains ({FULL_COUNT}: every acknowledged "
        "event is counted; below, those the files still ought to hold)",
    )
    args = parser.parse_args()
    print(json.dumps(soak(args.minutes, args.rate, args.channels, args.retained)))


if __name__ == "__main__":
    main()
