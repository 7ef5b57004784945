"""Web console cost with 10,000 registered agents (issue 16 acceptance 4).

Against one fresh redis-server: 10,000 agents registered (each with a workdir, one
pending inbox item and one wake entry), then the console's pages are rendered in
process through Starlette's test client (routing, reads, Jinja2, the whole response):

* ``agents_page``: ``GET /agents`` (page 1), a later page, an id search and a host search
  (``host:NAME`` reads every record);
* ``agent_page``: ``GET /agents/<id>`` for one agent with a few channels;
* ``overview``: the poller's status read (one per second however many pages listen);
* ``baseline``: ``tidings status --json`` (``hub.status()``) over the same fleet — what a
  console that re-used the status read for every page would pay.

Redis round trips are counted at the socket (one per command sent alone, one per
pipeline). Prints one JSON object. Goal: agents page p50 ≤ 200 ms.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _redis import percentile, redis_server

AGENTS = 10_000
RENDERS = 40
WARMUP = 3


class RoundTrips:
    """Counts packed sends on redis-py connections (a pipeline sends once)."""

    def __init__(self) -> None:
        import redis.connection

        self.count = 0
        original = redis.connection.AbstractConnection.send_packed_command

        def counting(conn: Any, command: Any, check_health: bool = True) -> None:
            self.count += 1
            original(conn, command, check_health)

        redis.connection.AbstractConnection.send_packed_command = counting  # type: ignore[method-assign]


def timed(run: Callable[[], Any], trips: RoundTrips, n: int = RENDERS) -> dict[str, float]:
    for _ in range(WARMUP):
        run()
    times, counts = [], []
    for _ in range(n):
        before = trips.count
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
        counts.append(trips.count - before)
    return {
        "p50_ms": round(percentile(times, 50), 2),
        "p99_ms": round(percentile(times, 99), 2),
        "round_trips": max(counts),
    }


def populate(client: Any, root: Path) -> None:
    from tidings.store import keys
    from tidings.store.inbox_keys import InboxKeys
    from tidings.store.models import AgentRecord
    from tidings.store.registry import AgentRegistry

    records = []
    with client.pipeline(transaction=False) as pipe:
        for i in range(AGENTS):
            agent_id = f"agent-{i:05d}"
            workdir = root / agent_id
            workdir.mkdir()
            record = AgentRecord(agent_id=agent_id, workdir=str(workdir), host=f"h{i % 4}")
            records.append(record)
            pipe.zadd(InboxKeys(agent_id).selectable, {"evt": 1})
            pipe.xadd(
                keys.AgentKeys(agent_id).wake_stream,
                {"kind": "inbox", "entry": json.dumps({"kind": "inbox"})},
            )
            if i % 1000 == 999:
                pipe.execute()
        pipe.execute()
    AgentRegistry(client).put_many(records)


def main() -> None:
    import redis
    from starlette.testclient import TestClient

    import tidings
    from tidings.web.app import build_app

    trips = RoundTrips()
    with redis_server() as url, tempfile.TemporaryDirectory(prefix="tidings-bench-web-") as tmp:
        client = redis.Redis.from_url(url)
        populate(client, Path(tmp))
        hub = tidings.connect(url)
        one = hub.agent(Path(tmp) / "agent-00042", agent_id="agent-00042", inline=True)
        for n in range(5):
            one.publish_event(f"mcp.c{n}", {"text": f"event {n} " * 20})
        app = build_app(hub)
        summary_read = app.state.console.poller.read_summary
        with TestClient(app, base_url="http://127.0.0.1") as web:

            def get(path: str) -> Callable[[], None]:
                def run() -> None:
                    answer = web.get(path)
                    assert answer.status_code == 200, answer.status_code

                return run

            first_page = timed(get("/agents"), trips)
            later_page = timed(get("/agents?page=150"), trips)
            search = timed(get("/agents?q=agent-0999"), trips)
            host_search = timed(get("/agents?q=host:h1"), trips, n=10)
            agent_page = timed(get("/agents/agent-00042"), trips)
            overview = timed(summary_read, trips)
            baseline = timed(hub.status, trips, n=10)
        hub.close()
    p50 = first_page["p50_ms"]
    print(
        json.dumps(
            {
                "benchmark": "web",
                "agents": AGENTS,
                "cpu_count": os.cpu_count(),
                "agents_page": first_page,
                "agents_page_150": later_page,
                "agents_search": search,
                "agents_search_by_host_reads_every_record": host_search,
                "agent_page": agent_page,
                "overview_status_read": overview,
                "baseline_status_json": baseline,
                "ratio_agents_page_to_status": round(p50 / baseline["p50_ms"], 3),
                "goal_agents_page_p50_ms": 200,
                "goal_met": p50 <= 200,
            }
        )
    )


if __name__ == "__main__":
    main()
