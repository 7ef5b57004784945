"""The registry as one record per agent plus a per-host index (issue 25, interfaces.md "Past one
Redis"): put, remove, move, what a crash between the two single-slot writes leaves and how
it converges, a host reading only its own agents, and the online migration of the old
one-hash layout (acceptance 6). On fakeredis and a real redis-server (``redis_client``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import tidings
from tidings.store import keys
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry
from tidings.store.registry_migration import migrate_legacy
from tidings.store.scripts import Scripts
from tidings.store.scripts import registry as registry_scripts


def rec(agent_id: str, host: str, workdir: str | None = None) -> AgentRecord:
    return AgentRecord(agent_id=agent_id, workdir=workdir or f"/w/{agent_id}", host=host)


def index_of(redis: Any, host: str) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in redis.hgetall(keys.host_agents(host)).items()}


def test_put_writes_a_record_and_its_hosts_index(redis_client: Any) -> None:
    registry = AgentRegistry(redis_client)
    registry.put(rec("a1", "h1"))
    registry.put(rec("a2", "h2"))
    assert registry.get("a1") == rec("a1", "h1")
    assert index_of(redis_client, "h1") == {"a1": "/w/a1"}
    assert redis_client.hget(keys.host_workdirs("h1"), "/w/a1") == b"a1"
    assert registry.hosts() == ["h1", "h2"]
    assert registry.version("h1") == 1 and registry.version("h2") == 1
    assert [r.agent_id for r in registry.all()] == ["a1", "a2"]
    assert not redis_client.exists(keys.LEGACY_AGENTS, keys.LEGACY_AGENTS_VERSION)
    registry.put(rec("a1", "h1"))  # unchanged: the index and its version stay
    assert registry.version("h1") == 1


def test_on_host_reads_only_its_hosts_keys(redis_client: Any) -> None:
    """Every key of host h2 and of its agents is made unreadable (WRONGTYPE): h1's read
    does not notice, so it touched none of them."""
    registry = AgentRegistry(redis_client)
    registry.put_many(
        [rec(f"a{n}", "h1") for n in range(3)] + [rec(f"b{n}", "h2") for n in range(3)]
    )
    for key in [
        keys.host_agents("h2"),
        keys.host_agents_version("h2"),
        *(keys.agent_record(f"b{n}") for n in range(3)),
    ]:
        redis_client.delete(key)
        redis_client.rpush(key, "not a record")
    assert [r.agent_id for r in registry.on_host("h1")] == ["a0", "a1", "a2"]
    assert registry.version("h1") == 1


def test_remove_drops_record_then_index(redis_client: Any) -> None:
    registry = AgentRegistry(redis_client)
    registry.put(rec("a1", "h1"))
    assert registry.remove("a1") is True
    assert registry.get("a1") is None and index_of(redis_client, "h1") == {}
    assert not redis_client.hexists(keys.host_workdirs("h1"), "/w/a1")
    assert registry.version("h1") == 2
    assert registry.remove("a1") is False


def test_a_move_lists_the_agent_on_its_new_host_only(redis_client: Any) -> None:
    registry = AgentRegistry(redis_client)
    registry.put(rec("a1", "h1"))
    registry.put(rec("a1", "h2"))
    assert index_of(redis_client, "h1") == {} and index_of(redis_client, "h2") == {"a1": "/w/a1"}
    assert registry.on_host("h1") == [] and registry.on_host("h2") == [rec("a1", "h2")]
    assert registry.version("h1") == 2  # the old host's scheduler notices the move (C27)
    assert [r.host for r in registry.all()] == ["h2"]


def test_a_changed_workdir_moves_the_workdir_map(redis_client: Any) -> None:
    registry = AgentRegistry(redis_client)
    registry.put(rec("a1", "h1", "/w/old"))
    registry.put(rec("a1", "h1", "/w/new"))
    assert registry.find_by_workdir("/w/old") is None
    assert registry.find_by_workdir("/w/new") == rec("a1", "h1", "/w/new")
    assert not redis_client.hexists(keys.host_workdirs("h1"), "/w/old")


def test_a_crash_in_a_move_converges_on_the_old_hosts_repair(redis_client: Any) -> None:
    """The record says h2 but the crash came before h2's index listed it: h1's index still
    does. Nobody serves it twice; h1's scheduler repair lists it on h2 and drops it here."""
    registry = AgentRegistry(redis_client)
    registry.put(rec("a1", "h1"))
    redis_client.set(keys.agent_record("a1"), rec("a1", "h2").model_dump_json())  # crash
    assert registry.on_host("h1") == [] and registry.on_host("h2") == []
    assert registry.all() == []
    assert registry.on_host("h1", repair=True) == []
    assert index_of(redis_client, "h1") == {} and registry.on_host("h2") == [rec("a1", "h2")]


def test_a_crash_in_a_remove_leaves_an_entry_the_repair_drops(redis_client: Any) -> None:
    registry = AgentRegistry(redis_client)
    registry.put(rec("a1", "h1"))
    registry.put(rec("a2", "h1"))
    redis_client.delete(keys.agent_record("a1"))  # the crash: record gone, entry left
    assert [r.agent_id for r in registry.on_host("h1")] == ["a2"]
    assert [r.agent_id for r in registry.all()] == ["a2"]
    registry.on_host("h1", repair=True)
    assert index_of(redis_client, "h1") == {"a2": "/w/a2"}


def test_a_repair_drops_nothing_once_the_index_moved(redis_client: Any) -> None:
    """A put re-adding the entry after the repair read it moves the version: no drop."""
    registry = AgentRegistry(redis_client)
    registry.put(rec("a1", "h1"))
    version, _ = registry.index("h1")
    registry.put(rec("a9", "h1"))
    assert (
        registry_scripts.index_drop(Scripts(redis_client), "h1", ["a1"], at_version=version) == -1
    )
    assert "a1" in index_of(redis_client, "h1")


def test_registering_again_lists_a_record_a_crash_left_unindexed(
    redis_client: Any,
    tmp_path: Path,
) -> None:
    with tidings.connect(client=redis_client) as hub:
        agent = hub.agent(tmp_path, agent_id="a1")
        redis_client.delete(keys.host_agents(agent.record.host))  # the crash: record, no index
        assert hub.agents() == []
        hub.agent(tmp_path, agent_id="a1")
        assert [a["agent_id"] for a in hub.agents()] == ["a1"]


def test_find_by_workdir_reads_each_hosts_map(redis_client: Any) -> None:
    registry = AgentRegistry(redis_client)
    registry.put_many([rec("a1", "h1"), rec("b1", "h2")])
    assert registry.find_by_workdir("/w/b1") == rec("b1", "h2")
    assert registry.find_by_workdir("/w/b1", hosts=["h1"]) is None
    assert registry.find_by_workdir("/w/none") is None


def legacy(redis: Any, records: list[AgentRecord]) -> None:
    """Today's layout, written by hand: one hash and its version counter."""
    for record in records:
        redis.hset(keys.LEGACY_AGENTS, record.agent_id, record.model_dump_json())
    redis.set(keys.LEGACY_AGENTS_VERSION, len(records))


def test_upgrade_keeps_every_agent(redis_client: Any, tmp_path: Path) -> None:
    """Acceptance 6: listed, found by workdir with the same id, used, counted by status."""
    workdirs = [tmp_path / name for name in ("one", "two", "three")]
    for workdir in workdirs:
        workdir.mkdir()
    host = tidings.Settings().host
    records = [
        rec("old-1", host, str(workdirs[0])),
        rec("old-2", host, str(workdirs[1])),
        rec("old-3", "elsewhere", str(workdirs[2])),
    ]
    legacy(redis_client, records)
    with tidings.connect(client=redis_client) as hub:
        assert [a["agent_id"] for a in hub.agents()] == ["old-1", "old-2", "old-3"]
        found = hub.find_agent(workdirs[1], inline=True)
        assert found is not None and found.agent_id == "old-2"
        assert found.publish_event("mcp.x", {"text": "after the upgrade"})["status"] == "ok"
        assert "mcp.x" in found.snapshot()
        assert sorted(a["agent_id"] for a in hub.status()["agents"]) == ["old-1", "old-2", "old-3"]
    # the old hash stays for old processes of a rolling upgrade; the marker says it is copied
    assert redis_client.hlen(keys.LEGACY_AGENTS) == 3
    assert redis_client.get(keys.LEGACY_MIGRATED) == b"3"


def test_a_registration_by_an_old_process_is_migrated_by_the_next_start(
    redis_client: Any,
) -> None:
    legacy(redis_client, [rec("a1", "h1")])
    assert migrate_legacy(redis_client) == 1
    assert migrate_legacy(redis_client) == 0  # nothing new: one read
    legacy(redis_client, [rec("a1", "h1"), rec("a2", "h2")])  # an old process registers
    assert migrate_legacy(redis_client) == 1
    assert [r.agent_id for r in AgentRegistry(redis_client).all()] == ["a1", "a2"]


def test_migration_is_idempotent_and_safe_to_run_at_once(redis_client: Any) -> None:
    records = [rec(f"a{n:03d}", f"h{n % 3}") for n in range(250)]
    legacy(redis_client, records)
    copied: list[int] = []
    threads = [
        threading.Thread(target=lambda: copied.append(migrate_legacy(redis_client)))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(copied) == 250 and migrate_legacy(redis_client) == 0
    registry = AgentRegistry(redis_client)
    assert registry.all() == sorted(records, key=lambda r: r.agent_id)
    assert sum(len(index_of(redis_client, f"h{n}")) for n in range(3)) == 250


def test_migration_keeps_a_newer_record(redis_client: Any) -> None:
    """A record already in the new layout (a new process moved it) wins over the old hash."""
    registry = AgentRegistry(redis_client)
    registry.put(rec("a1", "h2"))
    legacy(redis_client, [rec("a1", "h1")])
    migrate_legacy(redis_client)
    assert registry.get("a1") == rec("a1", "h2") and index_of(redis_client, "h1") == {}


@pytest.mark.parametrize("raw", ['{"agent_id":"a1"}', "not json"])
def test_migration_copies_an_unreadable_record_as_it_is(redis_client: Any, raw: str) -> None:
    redis_client.hset(keys.LEGACY_AGENTS, "a1", raw)
    migrate_legacy(redis_client)
    assert redis_client.get(keys.agent_record("a1")) == raw.encode()
