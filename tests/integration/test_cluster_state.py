"""Issue 25, acceptance 2 and 3: every feature on a Redis Cluster of three primaries,
with the broker on a standalone Redis (interfaces.md "Past one Redis").

``stores`` is one fixture parametrised over the store kinds (APScheduler 4 style): the
same scenarios run on one Redis and on the cluster; the key-placement checks are the
cluster's own.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tidings
import tidings.aio
from tests.support.memory_repo import MemoryRepo
from tests.support.polling import wait_until
from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisServer
from tests.support.waiters import wait_all, woken_count
from tidings.store import async_connection
from tidings.store.settings import Settings

pytestmark = pytest.mark.redis_server

#: Agents of the scenario: enough that a store of three primaries holds some on each.
AGENTS = 24
#: Agents of one event loop waiting at once (issue 25 acceptance 3).
WAITERS = 150
CHANNEL = "mcp.cluster"


class Stores:
    """The URLs of one store kind, and what the test may read behind the hub's back."""

    def __init__(
        self,
        kind: str,
        state_url: str,
        broker_url: str | None,
        cluster: RedisCluster | None,
        broker: RedisServer,
    ) -> None:
        self.kind, self.state_url, self.broker_url = kind, state_url, broker_url
        self.cluster, self.broker = cluster, broker

    def connect(self, host: str) -> tidings.Hub:
        return tidings.connect(
            self.state_url, broker_url=self.broker_url, settings=Settings(host=host)
        )


@pytest.fixture(params=["standalone", "cluster"])
def stores(request: pytest.FixtureRequest, redis_server: RedisServer) -> Iterator[Stores]:
    with redis_server.client() as c:
        c.flushall()
    if request.param == "standalone":
        yield Stores("standalone", redis_server.url, None, None, redis_server)
        return
    cluster: RedisCluster = request.getfixturevalue("redis_cluster")
    cluster.flush()
    yield Stores("cluster", cluster.url, redis_server.url, cluster, redis_server)


def events(workdir: Path, channel: str) -> list[dict[str, Any]]:
    data = json.loads((workdir / ".notification" / f"{channel}.json").read_text("utf-8"))
    found: list[dict[str, Any]] = data["data"]["events"]
    return found


def before_deadline(hub: tidings.Hub, root: Path, n: int) -> tuple[Any, Path, MemoryRepo]:
    """One agent through publish with idempotency keys, coalescing, flush, dismiss, a
    memory baseline and a one-second delay."""
    workdir = root / f"w{n}"
    workdir.mkdir()
    repo = MemoryRepo(root / f"m{n}", {"MEMORY.md": "one\n"})
    agent = hub.agent(workdir, memory_repo=repo.root, inline=True)
    assert agent.startup()["memory"]["status"] == "baseline"
    first = agent.publish_event(CHANNEL, {"n": 0}, idempotency_key=f"{n}-0")
    assert first["status"] == "ok" and first["flushed"] is True, first
    assert agent.publish_event(CHANNEL, {"n": 0}, idempotency_key=f"{n}-0")["duplicate"] is True
    for i in (1, 2, 3):  # records of one channel coalesce into its one file
        assert agent.publish_event(CHANNEL, {"n": i}, idempotency_key=f"{n}-{i}")["status"] == "ok"
    assert [e["n"] for e in events(workdir, CHANNEL)] == [0, 1, 2, 3]
    assert agent.publish_event("mcp.other", {"text": "x"})["status"] == "ok"
    agent.render()  # delivers what the agent is shown
    dismissed = agent.notification("dismiss_channel", {"channel": "mcp.other"})
    assert dismissed.get("status") == "ok", dismissed
    assert not (workdir / ".notification" / "mcp.other.json").exists()
    delayed = agent.notification("delay", {"channel": CHANNEL, "seconds": 1})
    assert delayed["status"] == "ok", delayed
    assert not (workdir / ".notification" / "delay-alarm.json").exists()
    return agent, workdir, repo


def after_deadline(agent: Any, workdir: Path, repo: MemoryRepo) -> None:
    """The delay's alarm shows; an edit of the memory repository is one inbox item of the
    next turn."""
    alarm = workdir / ".notification" / "delay-alarm.json"
    wait_until(
        lambda: agent.render() and alarm.exists(),
        timeout=10,
        what="the delay alarm after its deadline",
    )
    repo.write("notes.md", "two\n")
    turn = agent.prepare_turn()
    assert isinstance(turn, tidings.Turn), turn
    assert [item["source_kind"] for item in turn.inbox] == ["memory-change"]
    assert agent.finish_turn(turn)["status"] == "ok"
    assert [item["state"] for item in agent.inbox()] == ["handled"]


def test_every_feature_on_each_store(stores: Stores, tmp_path: Path) -> None:
    """Acceptance 2: 24 inline agents through the scenario; on the cluster their keys
    land on all three primaries, every cluster key carries ``{a:…}`` or ``{h:…}``, and
    no agent key lands on the broker."""
    with stores.connect("state-host") as hub:
        started = [before_deadline(hub, tmp_path, n) for n in range(AGENTS)]
        for agent, workdir, repo in started:
            after_deadline(agent, workdir, repo)
        assert len(hub.agents()) == AGENTS
        assert len(hub.status()["agents"]) == AGENTS
    if stores.cluster is None:
        return
    by_node = stores.cluster.keys_by_node()
    assert len(by_node) == 3 and all(by_node.values()), {p: len(k) for p, k in by_node.items()}
    untagged = [
        k
        for keys in by_node.values()
        for k in keys
        if not (k.startswith("{a:") or k.startswith("{h:"))
    ]
    assert not untagged
    with stores.broker.client() as broker:
        on_broker = [k.decode() for k in broker.scan_iter(count=1000)]
    assert on_broker and not [k for k in on_broker if "{a:" in k or "{h:" in k]


def test_150_waiters_of_one_event_loop_share_a_bounded_pool(
    stores: Stores, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Acceptance 3: 150 ``tidings.aio`` agents wait at once; with a pool far smaller
    than the waiters, a wait queues for a connection instead of failing."""
    monkeypatch.setattr(async_connection, "MAX_CONNECTIONS", 16)
    results = wait_all(stores.state_url, stores.broker_url, "wait-host", tmp_path, WAITERS, 0.5)
    failures = [r for r in results if isinstance(r, BaseException)]
    assert not failures, failures[:3]
    assert len([r for r in results if r is not None]) == woken_count(WAITERS)


def getkeys_calls(cluster: RedisCluster) -> int:
    """``COMMAND GETKEYS`` calls every primary has served so far."""
    total = 0
    for node in cluster.primaries():
        with node.client() as c:
            stats = c.info("commandstats")
        total += int(stats.get("cmdstat_command|getkeys", {}).get("calls", 0))
    return total


def test_waits_go_to_their_key_s_node_without_asking_for_keys(
    redis_cluster: RedisCluster, redis_server: RedisServer
) -> None:
    """A wait (``XREAD``, keys after ``STREAMS``) is routed by its key's slot on the client,
    sync and asyncio: no ``COMMAND GETKEYS`` round trip per wait (issue 25, blocker 4)."""
    redis_cluster.flush()
    streams = [f"{{a:agent-{n}}}:wake" for n in range(30)]
    with tidings.connect(
        redis_cluster.url, broker_url=redis_server.url, settings=Settings(host="route-host")
    ) as hub:
        before = getkeys_calls(redis_cluster)
        for key in streams:
            hub.redis.xadd(key, {"n": 1})
            assert hub.redis.xread({key: "0-0"}, count=1, block=1)

        async def waits() -> None:
            client = async_connection.async_client_for(hub.stores.state_config)  # type: ignore[union-attr]
            try:
                for key in streams:
                    assert await client.xread({key: "0-0"}, count=1, block=1)
            finally:
                await client.aclose()

        asyncio.run(waits())
        assert getkeys_calls(redis_cluster) == before
