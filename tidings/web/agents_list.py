"""The agents page: registry, filtered and paged, then the page's figures in one pipeline.

Two Redis round trips per render whatever the fleet's size: the registry hash, then per
agent of the page its pending inbox count, its newest wake entry and its blocked
channels. Live delays come from the delay state files of the page's agents.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tidings.jobs.view.status import delay_from_state
from tidings.store import keys
from tidings.store.inbox_keys import InboxKeys
from tidings.store.jsonfmt import utc_stamp

#: Agents per page.
PAGE_SIZE = 50
#: The longest search text taken (characters).
MAX_QUERY = 200


@dataclass(frozen=True)
class Listed:
    agent_id: str
    host: str
    workdir: str


def _text(raw: Any) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


def registry_rows(redis: Any) -> list[Listed]:
    """Every registered agent, sorted by id; unparsable records are left out."""
    rows = []
    for raw in redis.hvals(keys.AGENTS):
        try:
            record = json.loads(raw)
            rows.append(Listed(str(record["agent_id"]), str(record["host"]),
                               str(record["workdir"])))
        except (ValueError, KeyError, TypeError):
            continue
    rows.sort(key=lambda r: r.agent_id)
    return rows


def matches(row: Listed, needle: str) -> bool:
    return needle in row.agent_id.casefold() or needle in row.host.casefold() \
        or needle in row.workdir.casefold()


def stream_time(wake_id: str) -> str | None:
    """The UTC time a stream id was appended at (its milliseconds part)."""
    ms, _, _ = wake_id.partition("-")
    return utc_stamp(int(ms) / 1000) if ms.isdigit() else None


def last_wake(reply: Any) -> dict[str, Any] | None:
    """``{"id", "at", "kind"}`` of an ``XREVRANGE ... COUNT 1`` reply."""
    if not reply:
        return None
    wake_id, fields = reply[0]
    decoded = {_text(k): _text(v) for k, v in fields.items()}
    text = _text(wake_id)
    return {"id": text, "at": stream_time(text), "kind": decoded.get("kind", "?")}


def page_figures(redis: Any, rows: list[Listed], now: float) -> list[dict[str, Any]]:
    """The columns of the agents table for ``rows`` (one pipelined round trip)."""
    with redis.pipeline(transaction=False) as pipe:
        for row in rows:
            agent_keys = keys.AgentKeys(row.agent_id)
            pipe.zcard(InboxKeys(row.agent_id).selectable)
            pipe.xrevrange(agent_keys.wake_stream, count=1)
            pipe.smembers(agent_keys.blocked)
        replies = pipe.execute()
    out = []
    for i, row in enumerate(rows):
        pending, wake, blocked = replies[3 * i: 3 * i + 3]
        root = Path(row.workdir)
        live, overdue = delay_from_state(root, now) if root.is_dir() else (None, False)
        out.append({"agent_id": row.agent_id, "host": row.host, "workdir": row.workdir,
                    "pending": int(pending), "live_delay": live, "alarm_overdue": overdue,
                    "last_wake": last_wake(wake), "blocked": sorted(map(_text, blocked))})
    return out


def agents_page(redis: Any, now: float, query: str = "", page: int = 1) -> dict[str, Any]:
    """One page of the agents list, filtered by ``query`` (id, host or workdir)."""
    needle = query.strip()[:MAX_QUERY].casefold()
    rows = registry_rows(redis)
    if needle:
        rows = [r for r in rows if matches(r, needle)]
    pages = max(1, math.ceil(len(rows) / PAGE_SIZE))
    page = min(max(page, 1), pages)
    shown = rows[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
    return {"agents": page_figures(redis, shown, now), "total": len(rows), "page": page,
            "pages": pages, "q": query.strip()[:MAX_QUERY]}
