"""The agent registry: one record per agent plus a per-host index (issue 25).

An agent's :class:`AgentRecord` is the string ``{a:<agent_id>}:record``; the agents
of a host are listed in ``{h:<host>}:agents`` (agent id -> workdir), with the reverse
map ``{h:<host>}:workdirs`` and a version counter the host's scheduler watches
(channels.md C27). The hub-wide set of hosts (``tidings:hosts``) lives on the control
store. So a host reads only its own agents, and no command, pipeline or script touches
two hash tags: a change is single-slot writes in a crash-safe order.

**The record is the truth; an index is a hint.** A put writes the record first, then
lists the agent in its host's index, then drops it from a previous host's; a remove
deletes the record, then the index entry. A crash between two writes leaves an index
entry whose record is missing or names another host: readers skip it, and the host's
scheduler (``on_host(repair=True)``) lists the agent under its record's host and prunes
the entry, only if the index has not moved since it read it (a put may be re-adding
it). A record that a crash left in no index is listed again by the next registration
of the agent (``ensure_indexed``) or the repair of the host it left.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence

from pydantic import ValidationError
from redis import Redis

from tidings.store import keys, replies
from tidings.store.errors import UnknownAgentError
from tidings.store.models import AgentRecord
from tidings.store.scripts import Scripts
from tidings.store.scripts import registry as registry_scripts

logger = logging.getLogger("tidings")

#: Entries read per ``HSCAN`` page of a host's index, and records per pipelined read.
PAGE = 1000

#: A record as ``GET`` returns it: its JSON text, or ``None`` where none is stored.
StoredRecord = bytes | str | None


def parse_record(raw: StoredRecord, agent_id: str | bytes | None = None) -> AgentRecord | None:
    """The record stored as ``raw``, or ``None`` when there is none or it does not parse.

    One bad record is one skipped record (issue 24): a record that is not valid JSON,
    misses a field or breaks a rule is logged (one line, event ``agent_record_unreadable``)
    and read as absent, so status, the console and listings go on for every other agent.
    """
    if not raw:
        return None
    try:
        return AgentRecord.model_validate_json(raw)
    except ValidationError as exc:
        name = replies.text_or_none(agent_id)
        first = exc.errors()[0]
        problem = f"{'.'.join(map(str, first['loc'])) or 'record'}: {first['msg']}"
        logger.warning(
            "%s",
            "agent_record_unreadable",
            extra={
                "event": "agent_record_unreadable",
                "fields": {"agent_id": name, "problem": problem},
            },
        )
        return None


def stored_field(raw: object, name: str) -> str | None:
    """A text field of a stored record, parsed as plain JSON (a record that no longer
    validates still names the index it is listed in; what is not text is no record)."""
    if not raw or not isinstance(raw, bytes | str):
        return None
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return None
    field = value.get(name) if isinstance(value, dict) else None
    return field if isinstance(field, str) and field else None


def host_of(raw: object) -> str | None:
    """The ``host`` of a stored record (see :func:`stored_field`)."""
    return stored_field(raw, "host")


def text_pairs(page: Mapping[bytes | str, bytes | str] | list[bytes | str]) -> dict[str, str]:
    """An ``HSCAN`` page's field -> value mapping, as text (a page of fields alone,
    which ``NOVALUES`` asks for and this module never does, maps nothing)."""
    if not isinstance(page, Mapping):
        return {}
    return {replies.text(k): replies.text(v) for k, v in page.items()}


class AgentRegistry:
    """Records on the state store ``redis``; the host set on ``control`` (default: the
    same client)."""

    def __init__(self, redis: Redis, control: Redis | None = None) -> None:
        self._redis = redis
        self._control = control if control is not None else redis
        self._scripts = Scripts(redis)

    # -- records ----------------------------------------------------------------

    def get(self, agent_id: str) -> AgentRecord | None:
        return parse_record(self._redis.get(keys.agent_record(agent_id)), agent_id)

    def raw_many(self, agent_ids: Sequence[str]) -> list[StoredRecord]:
        """The stored records of ``agent_ids`` in order, unparsed (pipelined ``GET`` pages:
        a cluster client sends each page to the nodes that hold its keys)."""
        out: list[StoredRecord] = []
        for start in range(0, len(agent_ids), PAGE):
            with self._redis.pipeline(transaction=False) as pipe:
                for agent_id in agent_ids[start : start + PAGE]:
                    pipe.get(keys.agent_record(agent_id))
                out.extend(pipe.execute())
        return out

    def get_many(self, agent_ids: Sequence[str]) -> list[AgentRecord | None]:
        """The records of ``agent_ids`` in order (``None`` where none is registered)."""
        raws = self.raw_many(agent_ids)
        return [parse_record(raw, agent_id) for raw, agent_id in zip(raws, agent_ids, strict=True)]

    def require(self, agent_id: str) -> AgentRecord:
        record = self.get(agent_id)
        if record is None:
            raise UnknownAgentError(f"no agent registered as {agent_id!r}")
        return record

    # -- changes ----------------------------------------------------------------

    def put(self, record: AgentRecord) -> None:
        """Register or change ``record``; moves it between host indexes when its host changed."""
        self._control.sadd(keys.HOSTS, record.host)  # first: a lister walks this set
        previous = self._redis.set(
            keys.agent_record(record.agent_id), record.model_dump_json(), get=True
        )
        self.ensure_indexed(record)
        old_host = host_of(previous)
        if old_host is not None and old_host != record.host:
            registry_scripts.index_drop(self._scripts, old_host, [record.agent_id])

    def put_many(self, records: Iterable[AgentRecord]) -> None:
        """Register new ``records`` in bulk (fills, benches): records in pipelined pages,
        then one index script per host and page; no move handling."""
        batch = list(records)
        if batch:
            self._control.sadd(keys.HOSTS, *{r.host for r in batch})
        for start in range(0, len(batch), PAGE):
            page = batch[start : start + PAGE]
            with self._redis.pipeline(transaction=False) as pipe:
                for record in page:
                    pipe.set(keys.agent_record(record.agent_id), record.model_dump_json())
                pipe.execute()
            by_host: dict[str, list[tuple[str, str]]] = {}
            for record in page:
                by_host.setdefault(record.host, []).append((record.agent_id, record.workdir))
            for host, entries in by_host.items():
                registry_scripts.index_add(self._scripts, host, entries)

    def ensure_indexed(self, record: AgentRecord) -> bool:
        """List ``record`` in its host's index (idempotent); true if it was missing."""
        return (
            registry_scripts.index_add(
                self._scripts, record.host, [(record.agent_id, record.workdir)]
            )
            > 0
        )

    def remove(self, agent_id: str) -> bool:
        """Unregister ``agent_id``: its record first, then its index entry."""
        previous = self._redis.getdel(keys.agent_record(agent_id))
        if previous is None:
            return False
        host = host_of(previous)
        for name in [host] if host is not None else self.hosts():
            registry_scripts.index_drop(self._scripts, name, [agent_id])
        return True

    # -- hosts and indexes ------------------------------------------------------

    def hosts(self) -> list[str]:
        """Every host in the hub-wide host set, sorted (one ``SMEMBERS`` on the control store)."""
        return sorted(replies.text(h) for h in self._control.smembers(keys.HOSTS))

    def add_host(self, host: str) -> None:
        """List ``host`` in the host set (a scheduler's host is listed with no agents)."""
        self._control.sadd(keys.HOSTS, host)

    def version(self, host: str) -> int:
        """The change counter of ``host``'s index (0 before the first change)."""
        return int(self._redis.get(keys.host_agents_version(host)) or 0)

    def index(self, host: str) -> tuple[int, dict[str, str]]:
        """``host``'s index version and entries (agent id -> workdir), read in ``HSCAN``
        pages; the version is read before the first page."""
        with self._redis.pipeline(transaction=False) as pipe:
            pipe.get(keys.host_agents_version(host))
            pipe.hscan(keys.host_agents(host), 0, count=PAGE)
            version, (cursor, page) = pipe.execute()
        entries = text_pairs(page)
        while cursor:
            cursor, page = self._redis.hscan(keys.host_agents(host), cursor, count=PAGE)
            entries.update(text_pairs(page))
        return int(version or 0), entries

    def indexes(self, hosts: Sequence[str] | None = None) -> dict[str, dict[str, str]]:
        """Each host's index entries (agent id -> workdir), by host: the first ``HSCAN``
        page of every host in one pipeline, then the further pages host by host."""
        names = self.hosts() if hosts is None else list(hosts)
        with self._redis.pipeline(transaction=False) as pipe:
            for host in names:
                pipe.hscan(keys.host_agents(host), 0, count=PAGE)
            firsts = pipe.execute()
        out: dict[str, dict[str, str]] = {}
        for host, (cursor, page) in zip(names, firsts, strict=True):
            entries = out[host] = text_pairs(page)
            while cursor:
                cursor, page = self._redis.hscan(keys.host_agents(host), cursor, count=PAGE)
                entries.update(text_pairs(page))
        return out

    def on_host(self, host: str, *, repair: bool = False) -> list[AgentRecord]:
        """The agents whose record names ``host``, by agent id: ``host``'s index and its
        agents' records, nothing of other hosts. ``repair`` (the host's scheduler) also
        converges what a crash between two writes left (see the module docstring)."""
        version, entries = self.index(host)
        ids = sorted(entries)
        raws = self.raw_many(ids)
        records, gone, elsewhere = [], [], []
        for agent_id, raw in zip(ids, raws, strict=True):
            record = parse_record(raw, agent_id)
            if record is not None and record.host == host:
                records.append(record)
            elif raw is None:
                gone.append(agent_id)
            elif record is not None:
                elsewhere.append(record)
        if repair and (gone or elsewhere):
            self._repair(host, version, gone, elsewhere)
        return records

    def _repair(
        self, host: str, version: int, gone: list[str], elsewhere: list[AgentRecord]
    ) -> None:
        for record in elsewhere:
            self.ensure_indexed(record)
        dropped = registry_scripts.index_drop(
            self._scripts, host, gone + [r.agent_id for r in elsewhere], at_version=version
        )
        logger.info(
            "%s",
            "registry_index_repaired",
            extra={
                "event": "registry_index_repaired",
                "fields": {
                    "host": host,
                    "gone": len(gone),
                    "moved": len(elsewhere),
                    "dropped": dropped,
                },
            },
        )

    def all(self, hosts: Sequence[str] | None = None) -> list[AgentRecord]:
        """Every agent, by agent id: the host set (or ``hosts`` read from it already),
        each host's index, their records."""
        listed = self.indexes(hosts)
        ids = sorted({agent_id for entries in listed.values() for agent_id in entries})
        found: list[AgentRecord] = []
        for agent_id, raw in zip(ids, self.raw_many(ids), strict=True):
            record = parse_record(raw, agent_id)
            # Listed under its own host: an entry a crash left under another is skipped.
            if record is not None and record.host in listed and agent_id in listed[record.host]:
                found.append(record)
        return found

    def find_by_workdir(
        self, workdir: str, hosts: Sequence[str] | None = None
    ) -> AgentRecord | None:
        """The agent registered for ``workdir`` on one of ``hosts`` (default: every host):
        one pipelined ``HGET`` per host's workdir map, then the record."""
        names = list(hosts) if hosts is not None else self.hosts()
        if not names:
            return None
        with self._redis.pipeline(transaction=False) as pipe:
            for host in names:
                pipe.hget(keys.host_workdirs(host), workdir)
            found = pipe.execute()
        for host, agent_id in zip(names, found, strict=True):
            if agent_id is None:
                continue
            record = self.get(replies.text(agent_id))
            if record is not None and record.host == host and record.workdir == workdir:
                return record
        return None
