"""Restart safety of delay alarms with real ``tidings worker`` / ``tidings scheduler``
processes (delay.md D15-D19; issue 3 acceptance 4 and 5).

The sync tick is slowed to a minute here so that every alarm below is published
by the path under test (the alarm job, the start-up reconcile or a read), not by
the tick's backstop; the leader lease is shortened so a hand-over takes about a
couple of seconds instead of ten.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.delay import ALARM, STATE
from tests.support.groups import TIMING
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup, TidingsProcess
from tests.support.redis_server import RedisServer
from tidings.jobs.consumer import observe, request_delay
from tidings.jobs.runtime import Runtime
from tidings.store import keys
from tidings.store.clock import SystemClock
from tidings.store.files import atomic_write
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry
from tidings.store.settings import Settings
from tidings.workers.broker import make_broker
from tidings.workers.dispatch import BrokerDispatcher, send
from tidings.workers.routing import host_queue

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server]

LEASE_SECONDS = 2.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    s = RedisServer(tmp_path_factory.mktemp("redis-e2e-delay"), acl=True).start()
    yield s
    s.stop()


@dataclass
class Side:
    """The test's own view: a client, a runtime that enqueues like a client does."""

    rt: Runtime
    broker: Any
    host: str

    @property
    def redis(self) -> Any:
        return self.rt.redis

    def agent(self, workdir: Path, agent_id: str) -> AgentRecord:
        workdir.mkdir(parents=True, exist_ok=True)
        record = AgentRecord(agent_id=agent_id, workdir=os.path.realpath(workdir), host=self.host)
        AgentRegistry(self.redis).put(record)
        return record

    def pending(self) -> int:
        """Messages on the host queue not yet acknowledged."""
        return int(self.redis.hlen(f"tidings:{host_queue(self.host)}.msgs"))


@pytest.fixture
def side(server: RedisServer, e2e_env: dict[str, str], procs: ProcessGroup) -> Iterator[Side]:
    e2e_env.update(
        TIDINGS_REDIS_URL=server.url,
        TIDINGS_SYNC_INTERVAL="60",
        TIDINGS_SCHEDULER_LEASE_SECONDS=str(LEASE_SECONDS),
        TIDINGS_SCHEDULER_RENEW_SECONDS="0.25",
    )
    client = server.tidings_client()
    settings = Settings(host=e2e_env["TIDINGS_HOST"], redis_url=server.url)
    broker = make_broker(client, settings)
    yield Side(
        Runtime(client, SystemClock(), settings, BrokerDispatcher(broker)), broker, settings.host
    )
    client.close()


def leader(proc: TidingsProcess, timeout: float = 20.0) -> dict[str, Any]:
    return proc.wait_json(lambda v: v.get("status") == "leader", timeout)


def first_leader(candidates: list[TidingsProcess], timeout: float = 20.0) -> TidingsProcess:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in candidates:
            try:
                leader(proc, timeout=0.1)
                return proc
            except AssertionError:
                continue
    raise AssertionError("no scheduler became leader")


def identity(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def deadline_of(agent: AgentRecord) -> float:
    return float(json.loads((agent.root / STATE).read_bytes())["deadline_epoch"])


def published_once(side: Side, agent: AgentRecord, request_id: str) -> None:
    """The alarm exists, stays byte-for-byte the same file while every queued
    trigger is processed, and the state is ``published``."""
    alarm = agent.root / ALARM
    wait_until(alarm.exists, timeout=20, what="the alarm")
    first = identity(alarm)
    wait_until(
        lambda: side.redis.hlen(keys.scheduler_jobs(side.host)) == 0,
        timeout=10,
        what="every alarm job to fire",
    )
    wait_until(lambda: side.pending() == 0, timeout=10, what="the host queue to drain")
    # D15: the job runs D17 in the scheduler, which writes the state after the alarm
    wait_until(
        lambda: json.loads((agent.root / STATE).read_bytes())["status"] == "published",
        timeout=10,
        what="the published state",
    )
    assert identity(alarm) == first
    assert json.loads(alarm.read_bytes())["data"]["delay_alarm"]["request_id"] == request_id
    assert json.loads((agent.root / STATE).read_bytes())["status"] == "published"


def wait_past(epoch: float) -> None:
    wait_until(lambda: time.time() > epoch, timeout=30, what="the deadline to pass")


def test_d18_scheduler_killed_before_deadline_restarted_after(
    side: Side, procs: ProcessGroup, tmp_path: Path
) -> None:
    """Acceptance 4a: SIGKILL before the deadline, restart after it → exactly one alarm."""
    worker = procs.start("worker", "--threads", "2")
    first = procs.start("scheduler")
    worker.wait_ready()
    assert first.wait_ready()["role"] == "scheduler"
    leader(first)
    agent = side.agent(tmp_path / "w", "a1")
    atomic_write(agent.root, ".notification/email.json", b'{"header":"mail"}')
    result = request_delay(side.rt, agent, "email", 2)
    wait_until(
        lambda: side.redis.hexists(keys.scheduler_jobs(side.host), result["request_id"]),
        timeout=10,
        what="the scheduler to store the alarm job",
    )
    first.kill()
    wait_past(deadline_of(agent) + 0.5)
    assert not (agent.root / ALARM).exists(), "nothing publishes while no scheduler runs"
    second = procs.start("scheduler")
    # Its start-up reconcile (D18) expires the overdue delay, unless the prompt visit its
    # watcher starts for the agent (C27) ran the visit's D9 backstop first: either way,
    # exactly one alarm.
    assert leader(second)["startup"]["expired"] in (0, 1)
    published_once(side, agent, result["request_id"])


def test_d19_no_scheduler_at_deadline_next_read_or_tick_publishes(
    side: Side, procs: ProcessGroup, tmp_path: Path
) -> None:
    """Acceptance 4b: only a worker runs; a coherent read, or a sync tick, publishes."""
    worker = procs.start("worker", "--threads", "2")
    worker.wait_ready()
    by_read = side.agent(tmp_path / "read", "by-read")
    by_tick = side.agent(tmp_path / "tick", "by-tick")
    ids = {}
    for agent in (by_read, by_tick):
        atomic_write(agent.root, ".notification/email.json", b'{"header":"mail"}')
        ids[agent.agent_id] = request_delay(side.rt, agent, "email", 1)["request_id"]
    wait_past(max(deadline_of(by_read), deadline_of(by_tick)) + 0.3)
    assert not (by_read.root / ALARM).exists() and not (by_tick.root / ALARM).exists()

    obs = observe(side.rt, by_read)
    assert {"email", "delay-alarm"} <= set(obs.payloads), "alarm and target in one read"
    published_once(side, by_read, ids["by-read"])

    send(side.broker, "sync_host", host_queue(side.host), side.host)  # what a tick sends
    published_once(side, by_tick, ids["by-tick"])


def test_d15_scheduler_crash_mid_protocol_then_identical_alarm(
    side: Side, procs: ProcessGroup, tmp_path: Path
) -> None:
    """The alarm job runs D17 in the scheduler (D15): the scheduler dies right after
    writing the alarm; the next scheduler's start-up (D18) sends ``expire_delay``, the
    worker writes identical bytes and the alarm is published once."""
    worker = procs.start("worker", "--threads", "2")
    faulty = procs.start(
        "scheduler", env={"TIDINGS_ENABLE_FAULTS": "1", "TIDINGS_FAULTS": "expire.after_alarm"}
    )
    worker.wait_ready()
    leader(faulty)
    agent = side.agent(tmp_path / "w", "a1")
    request_delay(side.rt, agent, "email", 1)
    wait_until(lambda: not faulty.alive(), timeout=20, what="the injected crash")
    assert faulty.process.returncode == 75
    assert json.loads((agent.root / STATE).read_bytes())["status"] == "expiring"
    crashed_bytes = (agent.root / ALARM).read_bytes()
    leader(procs.start("scheduler"), timeout=30)
    wait_until(
        lambda: json.loads((agent.root / STATE).read_bytes())["status"] == "published",
        timeout=20,
        what="the owed alarm completed",
    )
    assert (agent.root / ALARM).read_bytes() == crashed_bytes


def test_d15_worker_down_the_scheduler_alone_publishes_once(
    side: Side, procs: ProcessGroup, tmp_path: Path
) -> None:
    """No worker at all: the alarm job publishes and wakes from the scheduler process
    (D15, D14), once; nothing is left on the host queue for a worker to repeat."""
    scheduler = procs.start("scheduler")
    leader(scheduler)
    agent = side.agent(tmp_path / "w", "alone")
    result = request_delay(side.rt, agent, "email", 1)
    assert result["status"] == "ok"
    wait_until((agent.root / ALARM).exists, timeout=20, what="the alarm")
    wait_until(
        lambda: side.redis.xlen(keys.AgentKeys("alone").wake_stream) == 1,
        timeout=10,
        what="the wake after the alarm",
    )
    assert side.pending() == 0
    assert json.loads((agent.root / STATE).read_bytes())["status"] == "published"


@TIMING
def test_d18_two_schedulers_one_leads_and_hands_over(
    side: Side, procs: ProcessGroup, tmp_path: Path
) -> None:
    """Acceptance 4c: one leads, alarms fire once, killing the leader hands over."""
    worker = procs.start("worker", "--threads", "2")
    candidates = [procs.start("scheduler"), procs.start("scheduler")]
    worker.wait_ready()
    holders = {proc.wait_ready()["holder"]: proc for proc in candidates}
    active = first_leader(candidates)
    standby = next(p for p in candidates if p is not active)
    lease = json.loads(side.redis.get(keys.scheduler_leader(side.host)))
    assert holders[lease["holder"]] is active

    agent = side.agent(tmp_path / "w", "a1")
    first = request_delay(side.rt, agent, "email", 1)
    published_once(side, agent, first["request_id"])
    with pytest.raises(AssertionError):
        leader(standby, timeout=0.5)

    active.kill()
    took_over = time.monotonic()
    leader(standby, timeout=LEASE_SECONDS + 10)
    assert time.monotonic() - took_over < LEASE_SECONDS + 5
    second = request_delay(side.rt, agent, "system", 1)
    wait_until(
        lambda: (
            json.loads((agent.root / ALARM).read_bytes())["data"]["delay_alarm"]["request_id"]
            == second["request_id"]
        ),
        timeout=20,
        what="the second alarm",
    )
    published_once(side, agent, second["request_id"])
