"""The agents page: registry ids, filtered and paged, then the page's figures in one pipeline.

A few Redis round trips per render: the host set and every host's index (agent id ->
workdir, one pipeline), then for each agent of the page its record, pending inbox count,
newest wake entry and blocked channels. A search matches agent ids and the indexed
workdirs (the console names an agent by its workdir); ``host:NAME`` matches a host's index.
Live delays come from the delay state files of the page's agents.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from redis import Redis

from tidings.inspection.agent_status import LiveDelay, delay_from_state
from tidings.store import keys, replies
from tidings.store.inbox_keys import InboxKeys
from tidings.store.jsonfmt import utc_stamp
from tidings.store.registry import AgentRegistry, parse_record

#: Agents per page.
PAGE_SIZE = 50
#: The longest search text taken (characters).
MAX_QUERY = 200


@dataclass(frozen=True)
class Listed:
    agent_id: str
    host: str
    workdir: str


#: A search with this prefix matches host names exactly.
HOST_PREFIX = "host:"

#: An ``XRANGE``/``XREVRANGE`` reply: (entry id, fields) pairs, as bytes or text.
StreamEntries = Sequence[tuple[object, Mapping[object, object]]]


class WakeSummary(TypedDict):
    """The newest wake of an agent: its stream id, time and kind."""

    id: str
    at: str | None
    kind: str


class AgentRow(TypedDict):
    """One row of the agents table."""

    agent_id: str
    host: str
    workdir: str
    pending: int
    live_delay: LiveDelay | None
    alarm_overdue: bool
    last_wake: WakeSummary | None
    blocked: list[str]


class AgentsPage(TypedDict):
    """One page of the agents list (``q``: the search as taken)."""

    agents: list[AgentRow]
    total: int
    page: int
    pages: int
    q: str


def matching_ids(redis: Redis, needle: str, control: Redis | None = None) -> list[str]:
    """Agent ids, sorted, that the search ``needle`` (casefolded) selects (the host set
    is on the control store ``control``, default: ``redis``)."""
    listed = AgentRegistry(redis, control).indexes()
    if needle.startswith(HOST_PREFIX):
        host = needle.removeprefix(HOST_PREFIX)
        found = {i for name, entries in listed.items() if name.casefold() == host for i in entries}
    else:
        found = {
            i
            for entries in listed.values()
            for i, workdir in entries.items()
            if needle in i.casefold() or needle in workdir.casefold()
        }
    return sorted(found)


def stream_time(wake_id: str) -> str | None:
    """The UTC time a stream id was appended at (its milliseconds part)."""
    ms, _, _ = wake_id.partition("-")
    return utc_stamp(int(ms) / 1000) if ms.isdigit() else None


def last_wake(reply: StreamEntries | None) -> WakeSummary | None:
    """``{"id", "at", "kind"}`` of an ``XREVRANGE ... COUNT 1`` reply."""
    if not reply:
        return None
    wake_id, fields = reply[0]
    decoded = {replies.text(k): replies.text(v) for k, v in fields.items()}
    text = replies.text(wake_id)
    return {"id": text, "at": stream_time(text), "kind": decoded.get("kind", "?")}


def page_figures(redis: Redis, ids: list[str], now: float) -> list[AgentRow]:
    """The columns of the agents table for ``ids`` (one pipelined round trip)."""
    with redis.pipeline(transaction=False) as pipe:
        for agent_id in ids:
            agent_keys = keys.AgentKeys(agent_id)
            pipe.get(keys.agent_record(agent_id))
            pipe.zcard(InboxKeys(agent_id).selectable)
            pipe.xrevrange(agent_keys.wake_stream, count=1)
            pipe.smembers(agent_keys.blocked)
        answers = pipe.execute()
    out: list[AgentRow] = []
    for i, agent_id in enumerate(ids):
        raw, pending, wake, blocked = answers[4 * i : 4 * i + 4]
        record = parse_record(raw, agent_id)  # logs an unreadable one
        if record is None:  # removed since the id listing, or unreadable
            continue
        row = Listed(record.agent_id, record.host, record.workdir)
        root = Path(row.workdir)
        live, overdue = delay_from_state(root, now) if root.is_dir() else (None, False)
        out.append(
            {
                "agent_id": row.agent_id,
                "host": row.host,
                "workdir": row.workdir,
                "pending": int(pending),
                "live_delay": live,
                "alarm_overdue": overdue,
                "last_wake": last_wake(wake),
                "blocked": sorted(map(replies.text, blocked)),
            }
        )
    return out


def agents_page(
    redis: Redis, now: float, query: str = "", page: int = 1, control: Redis | None = None
) -> AgentsPage:
    """One page of the agents list, filtered by ``query`` (see the module docstring)."""
    needle = query.strip()[:MAX_QUERY].casefold()
    ids = matching_ids(redis, needle, control)
    pages = max(1, math.ceil(len(ids) / PAGE_SIZE))
    page = min(max(page, 1), pages)
    shown = ids[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    return {
        "agents": page_figures(redis, shown, now),
        "total": len(ids),
        "page": page,
        "pages": pages,
        "q": query.strip()[:MAX_QUERY],
    }
