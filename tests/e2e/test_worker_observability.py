"""Issue 7, acceptance 4 (metrics half) and the structured logs: a real ``tidings
worker`` serves tidings' Prometheus metrics and logs JSON lines with message context.
Issue 14, acceptance 5: the process collectors, ``tidings_build_info`` and the status
gauges, scraped from a real worker."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import tidings
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup, TidingsProcess, add_agent, run_cli
from tests.support.redis_server import RedisServer
from tests.support.scrape import scrape
from tidings.store.settings import Settings
from tidings.workers.broker import make_broker
from tidings.workers.dispatch import send
from tidings.workers.routing import host_queue

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server]

#: Every metric family tidings defines (jobs/metrics.py, workers/message_metrics.py).
TIDINGS_FAMILIES = {
    "tidings_events_published",
    "tidings_events_coalesced",
    "tidings_flush_batch_records",
    "tidings_alarms_published",
    "tidings_alarm_lateness_seconds",
    "tidings_observations",
    "tidings_observation_duration_seconds",
    "tidings_inbox_admissions",
    "tidings_spills",
    "tidings_messages_processed",
    "tidings_messages_failed",
    "tidings_message_duration_seconds",
    "tidings_messages_retried",
    "tidings_messages_dead_lettered",
}
#: Issue 14: the process collectors, the build and the status gauges (tidings/_metrics.py).
PROCESS_FAMILIES = {
    "process_cpu_seconds",
    "process_resident_memory_bytes",
    "process_open_fds",
    "python_info",
    "python_gc_collections",
    "tidings_build_info",
}
GAUGE_FAMILIES = {
    "tidings_status_read_ok",
    "tidings_queue_depth",
    "tidings_queue_in_flight",
    "tidings_queue_delayed",
    "tidings_queue_dead",
    "tidings_scheduler_leader",
    "tidings_inbox_items",
    "tidings_live_delays",
    "tidings_agents",
}


@pytest.fixture
def server(own_redis: RedisServer) -> RedisServer:
    return own_redis


def publish(env: dict[str, str], workdir: Path, channel: str, text: str) -> None:
    add_agent(workdir, env)
    done = run_cli(
        [
            "publish",
            channel,
            "--event",
            json.dumps({"text": text}),
            "--workdir",
            str(workdir),
            "--wait",
        ],
        env,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["flushed"] is True


def json_logs(process: TidingsProcess) -> list[dict[str, Any]]:
    lines = []
    for line in list(process.stderr):
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return lines


def test_worker_serves_tidings_metrics_and_logs_json_with_message_context(
    procs: ProcessGroup, e2e_env: dict[str, str], server: RedisServer, tmp_path: Path
) -> None:
    env = {**e2e_env, "TIDINGS_REDIS_URL": server.url, "TIDINGS_METRICS_PORT": "0"}
    worker = procs.start("worker", env=env)
    port = worker.wait_ready()["metrics_port"]
    workdir = tmp_path / "agent"
    workdir.mkdir()
    publish(env, workdir, "mcp.build", "green")

    host = e2e_env["TIDINGS_HOST"]
    labels = (("actor", "flush_channel"), ("queue", host_queue(host)))
    metrics = wait_until(
        lambda: (
            (m := scrape(port))["tidings_messages_processed"].get(
                ("tidings_messages_processed_total", labels)
            )
            and m
        ),
        timeout=10,
        what="flush counted",
    )
    assert set(metrics) >= TIDINGS_FAMILIES | PROCESS_FAMILIES | GAUGE_FAMILIES
    assert metrics["tidings_flush_batch_records"][("tidings_flush_batch_records_sum", ())] == 1
    assert metrics["tidings_events_coalesced"][("tidings_events_coalesced_total", ())] == 0
    assert ("tidings_message_duration_seconds_count", labels) in metrics[
        "tidings_message_duration_seconds"
    ]

    # A message for an agent nobody registered: the actor logs it, with context.
    with server.client() as client:
        broker = make_broker(client, Settings(host=host))
        message = send(broker, "flush_channel", host_queue(host), "ghost", "mcp.build")
        send(broker, "no_such_actor", host_queue(host))
        broker.close()
    entry = wait_until(
        lambda: next(
            (e for e in json_logs(worker) if e.get("event") == "actor_unknown_agent"), None
        ),
        timeout=10,
        what="the worker's JSON log line",
    )
    assert entry["actor"] == "flush_channel"
    assert entry["message_id"] == message.message_id
    assert entry["agent_id"] == "ghost"
    assert entry["fields"] == {"actor": "flush_channel", "agent_id": "ghost"}
    assert entry["level"] == "warning" and entry["logger"] == "tidings" and entry["host"] == host
    # dramatiq's own records flow through the same handler.
    wait_until(
        lambda: any(
            e["logger"].startswith("dramatiq") and "no_such_actor" in e["message"]
            for e in json_logs(worker)
        ),
        timeout=10,
        what="dramatiq's log line",
    )
    assert worker.stop() == 0


def test_worker_processes_share_one_metrics_endpoint(
    procs: ProcessGroup, e2e_env: dict[str, str], server: RedisServer, tmp_path: Path
) -> None:
    """``--processes 2``: the parent serves the sum of both children's metrics."""
    env = {**e2e_env, "TIDINGS_REDIS_URL": server.url, "TIDINGS_METRICS_PORT": "0"}
    workers = procs.start("worker", "--processes", "2", env=env)
    port = workers.wait_json(lambda v: v.get("role") == "workers")["metrics_port"]
    published = 0
    hub = tidings.connect(server.url, settings=Settings(host=e2e_env["TIDINGS_HOST"]))
    try:
        for n in range(3):
            workdir = tmp_path / f"agent{n}"
            workdir.mkdir()
            agent = hub.agent(workdir)
            for channel in ("mcp.a", "mcp.b"):
                assert agent.publish_event(channel, {"n": n}, wait=True)["flushed"] is True
                published += 1
    finally:
        hub.close()

    def applied() -> float:
        family = scrape(port).get("tidings_flush_batch_records", {})
        return float(family.get(("tidings_flush_batch_records_sum", ()), 0))

    wait_until(lambda: applied() == published, timeout=10, what="every record counted once")
    assert workers.stop() == 0


def test_worker_gauges_follow_tidings_status(
    procs: ProcessGroup, e2e_env: dict[str, str], server: RedisServer, tmp_path: Path
) -> None:
    """The gauges are computed at scrape time from the reads of ``tidings status``: a
    dead letter, a leader lease, an inbox item and a live delay each show."""
    host = e2e_env["TIDINGS_HOST"]
    env = {**e2e_env, "TIDINGS_REDIS_URL": server.url, "TIDINGS_METRICS_PORT": "0"}
    worker = procs.start("worker", env=env)
    port = worker.wait_ready()["metrics_port"]
    workdir = tmp_path / "agent"
    workdir.mkdir()
    add_agent(workdir, env)
    hub = tidings.connect(server.url, settings=Settings(host=host))
    try:
        agent = hub.find_agent(workdir)
        assert agent is not None
        assert agent.admit("ticket", "a pending item")["status"] == "ok"
        assert agent.notification("delay", {"channel": "email", "seconds": 300})["status"] == "ok"
    finally:
        hub.close()
        hub.redis.close()
    queue = host_queue(host)
    with server.client() as client:
        # Scored now (ms), as dramatiq does: the broker's maintenance drops old dead letters.
        client.zadd(f"tidings:{queue}.XQ", {"dead-message-id": time.time() * 1000})
        procs.start("scheduler", env=env).wait_ready()

        seen: list[tuple[float | None, ...]] = []

        def figures() -> tuple[float | None, ...] | None:
            m = scrape(port)
            values = (
                m["tidings_status_read_ok"][("tidings_status_read_ok", ())],
                m["tidings_queue_dead"].get(("tidings_queue_dead", (("queue", queue),))),
                m["tidings_scheduler_leader"].get(("tidings_scheduler_leader", (("host", host),))),
                m["tidings_inbox_items"].get(
                    ("tidings_inbox_items", (("host", host), ("state", "pending")))
                ),
                m["tidings_live_delays"].get(("tidings_live_delays", (("host", host),))),
            )
            seen[:] = [values]
            return values if values == (1, 1, 1, 1, 1) else None

        try:
            wait_until(figures, timeout=30, what="gauges matching the status reads")
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}; last (ok, dead, leader, pending, delays): {seen}"
            ) from None
        status = json.loads(run_cli(["status", "--json"], env).stdout)
        assert [q["dead"] for q in status["queues"] if q["name"] == queue] == [1]
    build = scrape(port)["tidings_build_info"]
    [(name, labels)] = build
    assert name == "tidings_build_info" and dict(labels)["version"] == tidings.__version__
