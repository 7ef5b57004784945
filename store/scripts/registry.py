"""Typed calls of the registry scripts: a host's agent index (issue 25). Each call
touches one host's keys (one ``{h:<host>}`` slot)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tidings.store import keys
from tidings.store.scripts import Scripts, number


def index_add(scripts: Scripts, host: str, entries: Iterable[tuple[str, str]]) -> int:
    """List ``(agent id, workdir)`` pairs in ``host``'s index; how many changed."""
    flat = [part for entry in entries for part in entry]
    if not flat:
        return 0
    return number(
        "registry_index_add",
        scripts(
            "registry_index_add",
            [keys.host_agents(host), keys.host_workdirs(host), keys.host_agents_version(host)],
            flat,
        ),
    )


def index_drop(
    scripts: Scripts, host: str, agent_ids: Sequence[str], at_version: int | None = None
) -> int:
    """Drop ``agent_ids`` from ``host``'s index; with ``at_version``, only if the index
    is still at that version (else -1, nothing dropped)."""
    if not agent_ids:
        return 0
    version = "" if at_version is None else str(at_version)
    return number(
        "registry_index_drop",
        scripts(
            "registry_index_drop",
            [keys.host_agents(host), keys.host_workdirs(host), keys.host_agents_version(host)],
            [version, *agent_ids],
        ),
    )
