"""Delay-alarm lateness with one ``tidings worker`` and one ``tidings scheduler``.

100 agents each delay ``email``; the deadlines are spread over about 10 s. For
every alarm, lateness = the time this process sees ``delay-alarm.json`` renamed into
place (an inotify watch on each agent's ``.notification`` directory, read by a
thread that does nothing else) − ``deadline_epoch``. A file's mtime is not used: the
kernel stamps it from its coarse clock, up to a jiffy (4 ms at 250 Hz) behind, which
made alarms look on time or even early. The
in-run baseline is a bare APScheduler ``DateTrigger`` job firing a no-op at each
of the same deadlines in this process, so the ratio shows what the job graph
(alarm job → D17 in the scheduler process → locked file writes, delay.md D15) adds
to the timer itself. Never early: every alarm's own ``actual_seconds`` is at least
its ``requested_seconds``. The sync tick is slowed to a minute so that every alarm
comes from the alarm job, not from the tick's backstop. Prints one JSON object.
Goal (issue 33): p99 ≤ 5 ms, none early. On ``bea3012`` (the job enqueued
``expire_delay`` for a worker) this bench gave p99 18.8 ms.

    .venv/bin/python bench/alarms.py
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
from _redis import redis_server
from apscheduler.events import EVENT_SCHEDULER_STARTED
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.date import DateTrigger
from inotify_simple import INotify
from inotify_simple import flags as inotify_flags

from tidings.jobs.consumer.delay import request_delay
from tidings.jobs.runtime import Runtime
from tidings.store.clock import SystemClock
from tidings.store.files import atomic_write
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry
from tidings.store.settings import Settings
from tidings.workers.broker import make_broker
from tidings.workers.dispatch import BrokerDispatcher

#: One delay per agent (an agent has at most one live delay); requests are issued back to
#: back with delays of 1..10 s interleaved, so the deadlines spread over about 10 s.
AGENTS = 100
GOAL_P99_MS = 5.0
TIMEOUT_SECONDS = 60.0


def start_tidings(command: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start ``python -m tidings <command>`` and wait for its ``ready`` line."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tidings", command],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    want = "leader" if command == "scheduler" else "ready"
    for raw in iter(proc.stdout.readline, b""):
        try:
            if json.loads(raw).get("status") == want:
                return proc
        except ValueError:
            continue
    raise SystemExit(f"tidings {command} exited before it was {want}")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(q / 100 * len(ordered)))) - 1]


def summary(values_ms: list[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values_ms, 50), 1),
        "p99": round(percentile(values_ms, 99), 1),
        "max": round(max(values_ms), 1),
        "min": round(min(values_ms), 1),
    }


class BareBaseline:
    """A bare APScheduler in this process: no-op DateTrigger jobs at the same deadlines."""

    def __init__(self) -> None:
        self.aps = BlockingScheduler(timezone=UTC)
        self.lateness_ms: list[float] = []
        self._lock = threading.Lock()
        started = threading.Event()
        self.aps.add_listener(lambda _e: started.set(), EVENT_SCHEDULER_STARTED)
        self._thread = threading.Thread(target=self.aps.start, daemon=True)
        self._thread.start()
        started.wait(10)

    def _fire(self, deadline: float) -> None:
        late = (time.time() - deadline) * 1000
        with self._lock:
            self.lateness_ms.append(late)

    def add(self, deadline: float) -> None:
        when = datetime.fromtimestamp(deadline, UTC)
        self.aps.add_job(
            self._fire,
            DateTrigger(run_date=when, timezone=UTC),
            args=[deadline],
            misfire_grace_time=None,
        )

    def close(self) -> None:
        self.aps.shutdown(wait=True)
        self._thread.join(10)


class AlarmArrivals:
    """When each agent's ``delay-alarm.json`` first appears (this process's clock)."""

    def __init__(self) -> None:
        self.inotify = INotify()
        self.agent_of: dict[int, str] = {}
        self.seen: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def watch(self, agent_id: str, notification_dir: Path) -> None:
        wd = self.inotify.add_watch(str(notification_dir), inotify_flags.MOVED_TO)
        self.agent_of[wd] = agent_id

    def _read(self) -> None:
        while not self._stop.is_set():
            for event in self.inotify.read(timeout=100):
                if event.name == "delay-alarm.json":
                    now = time.time()
                    with self._lock:
                        self.seen.setdefault(self.agent_of[event.wd], now)

    def arrivals(self) -> dict[str, float]:
        with self._lock:
            return dict(self.seen)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.inotify.close()


def run(tmp: Path, url: str) -> dict[str, Any]:
    host = f"bench-{uuid.uuid4().hex[:8]}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TIDINGS_")},
        "TIDINGS_REDIS_URL": url,
        "TIDINGS_HOST": host,
        "TIDINGS_SYNC_INTERVAL": "60",
    }
    client = redis.Redis.from_url(url, protocol=2)
    processes: list[subprocess.Popen[bytes]] = []
    baseline = BareBaseline()
    arrivals = AlarmArrivals()
    try:
        processes.append(start_tidings("worker", env))
        processes.append(start_tidings("scheduler", env))
        settings = Settings(host=host, redis_url=url)
        dispatch = BrokerDispatcher(make_broker(client, settings))
        rt = Runtime(client, SystemClock(), settings, dispatch)
        agents = []
        for n in range(AGENTS):
            workdir = tmp / f"agent{n:03d}"
            workdir.mkdir()
            record = AgentRecord(agent_id=f"a{n:03d}", workdir=str(workdir), host=host)
            AgentRegistry(client).put(record)
            atomic_write(record.root, ".notification/email.json", b'{"header":"mail"}')
            arrivals.watch(record.agent_id, record.root / ".notification")
            agents.append(record)
        deadlines: dict[str, float] = {}
        for n, agent in enumerate(agents):
            result = request_delay(rt, agent, "email", 1 + n % 10)
            assert result["status"] == "ok", result
            state = json.loads((agent.root / ".notification/.delay_state.json").read_bytes())
            deadlines[agent.agent_id] = state["deadline_epoch"]
            baseline.add(state["deadline_epoch"])
        give_up = time.monotonic() + TIMEOUT_SECONDS
        while len(arrivals.arrivals()) < len(agents) and time.monotonic() < give_up:
            time.sleep(0.05)
        lateness_ms = {
            agent_id: (seen - deadlines[agent_id]) * 1000
            for agent_id, seen in arrivals.arrivals().items()
        }
        published = sum(
            json.loads((a.root / ".notification/.delay_state.json").read_bytes())["status"]
            == "published"
            for a in agents
        )
        early = 0
        for agent in agents:
            path = agent.root / ".notification/delay-alarm.json"
            if path.exists():
                done = json.loads(path.read_bytes())["data"]["delay_alarm"]
                early += done["actual_seconds"] < done["requested_seconds"]
        spread = max(deadlines.values()) - min(deadlines.values())
        alarms = list(lateness_ms.values())
        result_ms = summary(alarms) if alarms else {}
        base_ms = summary(baseline.lateness_ms) if baseline.lateness_ms else {}
        return {
            "benchmark": "delay_alarm_lateness",
            "alarms_requested": len(agents),
            "alarms_published": len(alarms),
            "states_published": published,
            "deadline_spread_seconds": round(spread, 2),
            "lateness_ms": result_ms,
            "baseline_bare_apscheduler_noop_ms": base_ms,
            "p99_minus_baseline_p99_ms": round(result_ms["p99"] - base_ms["p99"], 1)
            if result_ms and base_ms
            else None,
            "early_by_actual_seconds": early,
            "worker_poll_ms": settings.worker_poll_ms,
            "goal_p99_ms": GOAL_P99_MS,
            "goal_met": bool(result_ms)
            and len(alarms) == len(agents)
            and result_ms["p99"] <= GOAL_P99_MS
            and early == 0,
            "setup": "1 tidings worker (8 threads) + 1 tidings scheduler, real redis-server, "
            "sync tick slowed to 60 s",
        }
    finally:
        baseline.close()
        arrivals.close()
        for proc in processes:
            proc.terminate()
        for proc in processes:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
            if proc.stdout is not None:
                proc.stdout.close()
        client.close()


def main() -> None:
    with redis_server() as url, tempfile.TemporaryDirectory(prefix="tidings-bench-alarms-") as tmp:
        print(json.dumps(run(Path(tmp), url)))


if __name__ == "__main__":
    main()
