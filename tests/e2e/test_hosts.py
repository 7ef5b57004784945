"""Issue 7: many hosts against one Redis (acceptance 1) and ``tidings agents move``
while messages are in flight.

Each ``tidings worker`` serves one ``TIDINGS_HOST`` and exposes its own metrics,
so a worker's count of flush file writes (and of delay alarms written) says
exactly which host wrote the files.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tidings
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup, TidingsProcess, run_cli
from tests.support.redis_server import RedisServer
from tests.support.scrape import flush_writes, scrape
from tidings._agent import Agent
from tidings._hub import Hub
from tidings.jobs.channels.publishing import buffered_records
from tidings.store.settings import Settings
from tidings.workers.routing import host_queue

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server]

CHANNEL = "mcp.work"


@pytest.fixture
def server(own_redis: RedisServer) -> RedisServer:
    return own_redis


@pytest.fixture
def hub(server: RedisServer) -> Iterator[Hub]:
    opened = tidings.connect(server.url, settings=Settings(host="producer"))
    yield opened
    opened.close()


@pytest.fixture
def env(e2e_env: dict[str, str], server: RedisServer) -> dict[str, str]:
    # A full scan every tick: the tests count sync_host runs as the tick's backstop (C27).
    return {
        **e2e_env,
        "TIDINGS_REDIS_URL": server.url,
        "TIDINGS_METRICS_PORT": "0",
        "TIDINGS_FULL_SCAN_SECONDS": "1",
    }


def start_worker(procs: ProcessGroup, env: dict[str, str], host: str) -> tuple[TidingsProcess, int]:
    worker = procs.start("worker", "--threads", "2", env={**env, "TIDINGS_HOST": host})
    return worker, int(worker.wait_ready()["metrics_port"])


def start_scheduler(
    procs: ProcessGroup, env: dict[str, str], host: str
) -> tuple[TidingsProcess, int]:
    """A host's scheduler and its metrics port, returned once it leads its host."""
    scheduler = procs.start("scheduler", env={**env, "TIDINGS_HOST": host})
    port = int(scheduler.wait_ready()["metrics_port"])
    scheduler.wait_json(lambda v: v.get("status") == "leader", timeout=30)
    return scheduler, port


def processed(port: int, actor: str, host: str) -> float:
    """Messages of ``actor`` the worker behind ``port`` has handled from ``host``'s queue."""
    family = scrape(port).get("tidings_messages_processed", {})
    labels = (("actor", actor), ("queue", host_queue(host)))
    return family.get(("tidings_messages_processed_total", labels), 0.0)


def alarms_written(*ports: int) -> float:
    """Alarms a host wrote: its scheduler runs the expiry (D15), its worker the fallback."""
    return sum(
        scrape(port)
        .get("tidings_alarms_published", {})
        .get(("tidings_alarms_published_total", ()), 0.0)
        for port in ports
    )


def alarm(agent: Agent) -> Any:
    path = Path(agent.workdir) / ".notification" / "delay-alarm.json"
    return json.loads(path.read_text("utf-8"))["data"]["delay_alarm"] if path.exists() else None


def delay(agent: Agent, seconds: int) -> tuple[str, float]:
    """The tool's ``delay`` action (runs here); returns the request id and deadline."""
    result = agent.notification("delay", {"channel": CHANNEL, "seconds": seconds})
    assert result["status"] == "ok", result
    state = json.loads((Path(agent.workdir) / ".notification" / ".delay_state.json").read_text())
    return state["request_id"], state["deadline_epoch"]


def writes_reach(port: int, count: int) -> None:
    """The process behind ``port`` has counted ``count`` flush writes (the count
    follows the write by a moment)."""
    wait_until(lambda: flush_writes(port) >= count, timeout=10, what=f"{count} flush writes")
    assert flush_writes(port) == count


def workdir(root: Path, name: str) -> Path:
    (root / name).mkdir()
    return root / name


def events(agent: Agent) -> list[Any]:
    path = Path(agent.workdir) / ".notification" / f"{CHANNEL}.json"
    if not path.exists():
        return []
    return [e["round"] for e in json.loads(path.read_text("utf-8"))["data"]["events"]]


def test_two_hosts_each_write_only_their_agents_and_wait_for_each_other(
    procs: ProcessGroup, env: dict[str, str], hub: Hub, tmp_path: Path
) -> None:
    """Acceptance 1: files are written only by the agent's own host; a killed host
    stops nobody else; its messages wait and are processed when it returns."""
    one, two = f"{env['TIDINGS_HOST']}-1", f"{env['TIDINGS_HOST']}-2"
    _, port_one = start_worker(procs, env, one)
    worker_two, port_two = start_worker(procs, env, two)
    agents = {
        host: [hub.agent(workdir(tmp_path, f"{host}-{n}"), host=host) for n in range(2)]
        for host in (one, two)
    }

    for group in agents.values():
        for agent in group:
            assert agent.publish_event(CHANNEL, {"round": 1}, wait=True)["flushed"] is True
    writes_reach(port_one, 2)
    writes_reach(port_two, 2)

    worker_two.kill()
    for agent in agents[one]:
        assert agent.publish_event(CHANNEL, {"round": 2}, wait=True)["flushed"] is True
    for agent in agents[two]:
        assert agent.publish_event(CHANNEL, {"round": 2})["flushed"] is False
    writes_reach(port_one, 4)
    assert all(events(agent) == [1, 2] for agent in agents[one])
    assert all(events(agent) == [1] for agent in agents[two])
    assert all(
        len(buffered_records(hub.runtime, agent.record, CHANNEL)) == 1 for agent in agents[two]
    )

    _, port_back = start_worker(procs, env, two)
    wait_until(
        lambda: all(events(agent) == [1, 2] for agent in agents[two]),
        timeout=20,
        what="host two's messages processed on its return",
    )
    writes_reach(port_back, 2)
    assert flush_writes(port_one) == 4


def test_two_worker_and_scheduler_pairs_keep_their_agents_apart(
    procs: ProcessGroup, env: dict[str, str], hub: Hub, tmp_path: Path
) -> None:
    """Acceptance 1 with both processes per host: files and alarms of an agent are
    written only by its host's worker, its alarm fired by its host's scheduler; with
    host two's worker and scheduler killed, host one's agents keep flowing (publish and
    alarm); host two's flush waits, and its delay that came due meanwhile fires exactly
    once when its scheduler and worker return."""
    env = {**env, "TIDINGS_SCHEDULER_LEASE_SECONDS": "2", "TIDINGS_SCHEDULER_RENEW_SECONDS": "0.3"}
    one, two = f"{env['TIDINGS_HOST']}-1", f"{env['TIDINGS_HOST']}-2"
    _, port_one = start_worker(procs, env, one)
    _, timer_one = start_scheduler(procs, env, one)
    worker_two, port_two = start_worker(procs, env, two)
    scheduler_two, timer_two = start_scheduler(procs, env, two)
    first = hub.agent(workdir(tmp_path, "one"), host=one)
    second = hub.agent(workdir(tmp_path, "two"), host=two)

    for agent in (first, second):
        assert agent.publish_event(CHANNEL, {"round": 1}, wait=True)["flushed"] is True
    request_id, _ = delay(first, 1)
    wait_until(
        lambda: alarms_written(port_one, timer_one) == 1, timeout=15, what="host one's alarm"
    )
    assert alarm(first)["request_id"] == request_id
    writes_reach(port_one, 1)
    writes_reach(port_two, 1)
    assert alarms_written(port_two, timer_two) == 0

    worker_two.kill()
    scheduler_two.kill()
    late_request, late_deadline = delay(second, 1)
    assert second.publish_event(CHANNEL, {"round": 2})["flushed"] is False
    assert first.publish_event(CHANNEL, {"round": 2}, wait=True)["flushed"] is True
    request_id, _ = delay(first, 1)
    wait_until(
        lambda: alarms_written(port_one, timer_one) == 2,
        timeout=15,
        what="host one's second alarm while host two is down",
    )
    assert alarm(first)["request_id"] == request_id
    wait_until(lambda: time.time() > late_deadline + 0.5, timeout=5, what="host two's deadline")
    figures = hub.status()
    assert alarm(second) is None and events(second) == [1]
    assert {q["name"]: q["depth"] for q in figures["queues"]}[host_queue(two)] == 1
    assert [a["alarm_overdue"] for a in figures["agents"] if a["host"] == two] == [True]

    _, port_back = start_worker(procs, env, two)
    _, timer_back = start_scheduler(procs, env, two)
    wait_until(
        lambda: events(second) == [1, 2] and alarm(second) is not None,
        timeout=30,
        what="host two's waiting flush and overdue alarm on its return",
    )
    assert alarm(second)["request_id"] == late_request
    wait_until(
        lambda: alarms_written(port_back, timer_back) == 1, timeout=10, what="the alarm counted"
    )
    writes_reach(port_back, 1)
    # Every path that could fire it again (the alarm job, run in the returned scheduler
    # (D15) at its start-up reconcile (D18), and the sync tick's backstop) has run by the
    # time the returned worker has handled a few more sync ticks: the reconcile runs
    # before the scheduler's first tick, and any expire_delay it queued was queued first.
    ticks = processed(port_back, "sync_host", two)
    wait_until(
        lambda: processed(port_back, "sync_host", two) >= ticks + 3,
        timeout=15,
        what="every alarm path run on host two",
    )
    assert alarms_written(port_back, timer_back) == 1
    assert alarms_written(port_one, timer_one) == 2
    assert events(first) == [1, 2]


def forwarded(worker: TidingsProcess, agent_id: str) -> bool:
    for line in list(worker.stderr):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if entry.get("event") == "actor_forwarded" and entry.get("agent_id") == agent_id:
            return True
    return False


def test_agents_move_is_safe_with_messages_in_flight(
    procs: ProcessGroup, env: dict[str, str], hub: Hub, tmp_path: Path
) -> None:
    """A message queued for the old host is processed by the new host only; the old
    host writes nothing after the move (its flush-write count stays at zero)."""
    old, new = f"{env['TIDINGS_HOST']}-old", f"{env['TIDINGS_HOST']}-new"
    old_worker, port_old = start_worker(procs, env, old)
    _, port_new = start_worker(procs, env, new)
    agent = hub.agent(workdir(tmp_path, "agent"), host=old)
    assert agent.publish_event(CHANNEL, {"round": 1}, wait=True)["flushed"] is True
    writes_reach(port_old, 1)

    old_worker.stop()
    # `agent` still routes to the old host: this flush message waits in its queue.
    assert agent.publish_event(CHANNEL, {"round": 2})["flushed"] is False
    moved = run_cli(["agents", "move", "--agent-id", agent.agent_id, "--host", new], env)
    assert moved.returncode == 0, moved.stderr
    assert json.loads(moved.stdout) == {
        "status": "ok",
        "agent_id": agent.agent_id,
        "from_host": old,
        "to_host": new,
        "moved": True,
        "settled": True,
        "in_flight": 0,
    }
    wait_until(lambda: events(agent) == [1, 2], timeout=20, what="the new host's flush")

    returned, port_returned = start_worker(procs, env, old)
    wait_until(
        lambda: forwarded(returned, agent.agent_id),
        timeout=20,
        what="the old host forwarding its queued message",
    )
    assert agent.publish_event(CHANNEL, {"round": 3}, wait=True)["flushed"] is True
    assert events(agent) == [1, 2, 3]
    assert flush_writes(port_returned) == 0
    labels = (("actor", "flush_channel"), ("queue", host_queue(old)))
    wait_until(
        lambda: (
            scrape(port_returned)["tidings_messages_processed"].get(
                ("tidings_messages_processed_total", labels), 0
            )
            >= 2
        ),
        timeout=10,
        what="both queued messages handled (forwarded) by the old host",
    )
    wait_until(lambda: flush_writes(port_new) >= 2, timeout=10, what="the new host's writes")
