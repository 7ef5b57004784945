"""Online migration of the pre-issue-25 registry (one hash ``tidings:agents``) to one
record per agent plus per-host indexes (:mod:`tidings.store.registry`).

Every process that opens the registry for work (a hub, a worker, a scheduler) calls
:func:`migrate_legacy`: one pipelined read when there is nothing (more) to migrate.
Several processes may run it at once: each page of the legacy hash is copied with
``SET NX`` (a record already in the new layout wins: it is newer) and listed in its
host's index (idempotent). The legacy hash itself stays, so that processes of the old
version still running during a rolling upgrade keep finding their agents; the marker
``tidings:agents:migrated`` remembers the legacy version counter it copied, and a later
change by an old process (the counter moved) is copied by the next start. Once no old
process runs, the operator may delete the three legacy keys (deploy/README "Upgrades").
A record that does not parse is copied as it is and stays readable as unreadable (one
skipped record, issue 24); when it names no host it is listed in no index.
"""

from __future__ import annotations

import logging

from redis import Redis
from redis.exceptions import NoPermissionError

from tidings.store import keys, replies
from tidings.store.registry import PAGE, AgentRegistry, host_of, stored_field, text_pairs
from tidings.store.scripts import Scripts
from tidings.store.scripts import registry as registry_scripts

logger = logging.getLogger("tidings")


def migrate_legacy(redis: Redis, control: Redis | None = None) -> int:
    """Move every entry of the legacy registry hash; how many this call copied.

    A client whose ACL user may not write (``tidings-monitor``) leaves the migration to
    the workers and schedulers (a DEBUG line says so) and reads the new layout only."""
    try:
        with redis.pipeline(transaction=False) as pipe:
            pipe.exists(keys.LEGACY_AGENTS)
            pipe.get(keys.LEGACY_AGENTS_VERSION)
            pipe.get(keys.LEGACY_MIGRATED)
            exists, version, migrated = pipe.execute()
        version = replies.text(version or "0")
        if not exists or replies.text_or_none(migrated) == version:
            return 0
        copied = _migrate(redis, control)
        redis.set(keys.LEGACY_MIGRATED, version)  # read before the copy: a later change re-runs
        return copied
    except NoPermissionError as exc:  # a read-only role: routine, so DEBUG
        logger.debug(
            "%s",
            "registry_migration_skipped",
            extra={"event": "registry_migration_skipped", "fields": {"detail": str(exc)[:200]}},
        )
        return 0


def _migrate(redis: Redis, control: Redis | None) -> int:
    runner, control = Scripts(redis), control if control is not None else redis
    copied, cursor = 0, 0
    while True:
        cursor, page = redis.hscan(keys.LEGACY_AGENTS, cursor, count=PAGE)
        entries = list(text_pairs(page).items())
        copied += _copy(redis, control, runner, entries)
        if not cursor:
            break
    logger.info(
        "%s",
        "registry_migrated",
        extra={"event": "registry_migrated", "fields": {"copied": copied}},
    )
    return copied


def _copy(redis: Redis, control: Redis, runner: Scripts, entries: list[tuple[str, str]]) -> int:
    if not entries:
        return 0
    with redis.pipeline(transaction=False) as pipe:
        for agent_id, raw in entries:
            pipe.set(keys.agent_record(agent_id), raw, nx=True)
        written = pipe.execute()
    current = AgentRegistry(redis, control).raw_many([agent_id for agent_id, _ in entries])
    by_host: dict[str, list[tuple[str, str]]] = {}
    for (agent_id, raw), now in zip(entries, current, strict=True):
        host = host_of(raw)
        workdir = stored_field(raw, "workdir")
        # Index what this layout now holds as copied; a newer record keeps its own index.
        if host is not None and workdir is not None and replies.text(now) == raw:
            by_host.setdefault(host, []).append((agent_id, workdir))
    if by_host:
        control.sadd(keys.HOSTS, *by_host)
    for host, listed in by_host.items():
        registry_scripts.index_add(runner, host, listed)
    return sum(1 for ok in written if ok)
