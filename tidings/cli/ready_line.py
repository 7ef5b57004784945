"""``tidings up`` on a terminal: the ready line for people (JSON stays for pipes and --json)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TypedDict
from urllib.parse import urlsplit

from tidings.cli.web import DEFAULT_HOST, DEFAULT_PORT

#: Agents named on the line; more are counted.
NAMED_AGENTS = 4
#: What a scheduler event after the first says.
CHANGES = {"leader": "leads again", "standby": "is on standby: another process holds its lease"}


class UpReady(TypedDict):
    """``tidings up``'s ready line (JSON)."""

    status: str
    role: str
    url: str
    embedded: bool
    durable: bool
    host: str
    state_dir: str | None
    engine: str | None
    #: The default store's ``appendfsync``; ``None`` when ``tidings up`` serves no engine.
    fsync: str | None
    agents: Sequence[Mapping[str, object]]
    metrics_port: int | None


def _store(ready: UpReady) -> str:
    """Which store, how durable, where."""
    parts = urlsplit(ready["url"])
    where = f"{parts.hostname}:{parts.port}" if parts.hostname else ready["url"]
    if ready["state_dir"] is None:  # a Redis of the user's own
        return f"store {ready['url']}"
    if ready["embedded"]:
        return f"store in memory (NOT durable) at {where}"
    return (
        f"store {ready['engine']} (AOF, fsync {ready['fsync']}) at {where}, "
        f"data in {ready['state_dir']}"
    )


def _agents(agents: Sequence[Mapping[str, object]]) -> str:
    """The agents by workdir name."""
    if not agents:
        return "no agents yet (tidings agents add --workdir DIR)"
    names = [os.path.basename(str(a.get("workdir", ""))) or str(a.get("agent_id")) for a in agents]
    shown = ", ".join(names[:NAMED_AGENTS])
    more = f" and {len(names) - NAMED_AGENTS} more" if len(names) > NAMED_AGENTS else ""
    return f"{len(names)} agent{'' if len(names) == 1 else 's'}: {shown}{more}"


def up_line(ready: UpReady) -> str:
    """One line: the store, the agents, the console's URL, how to stop."""
    console = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}/"
    return (
        f"tidings up: ready; {_store(ready)}; {_agents(ready['agents'])}; "
        f"console: run `tidings web`, then open {console}; Ctrl-C to stop"
    )


def scheduler_changes() -> Callable[[Mapping[str, object]], None]:
    """Scheduler events on a terminal: the first ``leader`` is what the ready line
    implies; a later change of leadership is one line on stderr."""
    seen: list[str] = []

    def on_event(event: Mapping[str, object]) -> None:
        status = str(event.get("status"))
        if seen or status != "leader":
            what = CHANGES.get(status, f"is now {status}")
            print(f"tidings up: this host's scheduler {what}", file=sys.stderr, flush=True)
        seen.append(status)

    return on_event
