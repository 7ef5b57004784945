"""Which channels an agent accepts (channels.md C5, C6, C38, C41).

Allowed = a valid name (C2) that is a built-in, starts with ``mcp.``, or is the
channel of a manifest in *this agent's* ``.notification/hooks.json``. The
registry is re-read whenever its ``(dev, ino, size, mtime_ns, ctime_ns)``
changes; if it cannot be loaded, the agent's last loaded set (kept in Redis)
stands in, and the failure is logged, never raised.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tidings.jobs import log
from tidings.jobs.channels.manifests import Manifest
from tidings.jobs.channels.names import BUILTIN_CHANNELS, MCP_PREFIX, name_error
from tidings.jobs.runtime import Runtime
from tidings.store.files import safe_read, stat_key
from tidings.store.jsonread import Malformed, loads_or, parse
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord

#: The hooks registry, relative to the workdir.
HOOKS_FILE = ".notification/hooks.json"


@dataclass(frozen=True)
class RegistryLoad:
    """A registry read: the manifests, or why it could not be loaded (C38)."""

    manifests: tuple[Manifest, ...] = ()
    error: str | None = None


def load_registry(root: Path) -> RegistryLoad:
    outcome = safe_read(root, HOOKS_FILE)
    if outcome.kind == "absent":
        return RegistryLoad()
    if not outcome.ok:
        return RegistryLoad(error=f"hooks.json is unreadable ({outcome.error})")
    parsed = parse(outcome.data)
    if isinstance(parsed, Malformed):
        return RegistryLoad(error=parsed.message)
    value = parsed.value
    if not isinstance(value, list):
        return RegistryLoad()
    return RegistryLoad(tuple(Manifest.parse(item) for item in value if isinstance(item, dict)))


def _hook_channel(manifest: Manifest) -> str | None:
    return manifest.hook_channel


@dataclass(frozen=True)
class Allowlist:
    hook_channels: frozenset[str] = frozenset()
    #: Verdicts already given (a read asks about the same names several times).
    _seen: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def allows(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        verdict = self._seen.get(name)
        if verdict is None:
            verdict = self._seen[name] = name_error(name) is None and (
                name in BUILTIN_CHANNELS
                or name.startswith(MCP_PREFIX)
                or name in self.hook_channels
            )
        return verdict


@dataclass(frozen=True)
class RegistryState:
    """This agent's hook channels and whether the registry itself loaded (C41)."""

    hook_channels: frozenset[str]
    loaded: bool


_cache: dict[str, tuple[tuple[int, ...] | None, RegistryState]] = {}
_cache_lock = threading.Lock()


def _registry_stat(root: Path) -> tuple[int, ...] | None:
    try:
        return stat_key(os.lstat(root / HOOKS_FILE))
    except OSError:
        return None


def _cache_key(agent: AgentRecord) -> str:
    return f"{agent.agent_id}\0{agent.workdir}"


def invalidate(agent: AgentRecord) -> None:
    """Forget the agent's cached registry (after a successful registry action)."""
    with _cache_lock:
        _cache.pop(_cache_key(agent), None)


def peek_registry_state(rt: Runtime, agent: AgentRecord) -> RegistryState:
    """:func:`registry_state` for a reader that must write nothing (the web console):
    the registry as it is now, else the last good set; no cache, no Redis write, no log."""
    loaded = load_registry(agent.root)
    if loaded.error is None:
        channels = frozenset(c for c in map(_hook_channel, loaded.manifests) if c is not None)
        return RegistryState(channels, loaded=True)
    return RegistryState(_last_loaded(rt, agent), loaded=False)


def _last_loaded(rt: Runtime, agent: AgentRecord) -> frozenset[str]:
    """C41: the agent's last loaded hook channels (in Redis; none if never loaded)."""
    last = loads_or(rt.redis.get(AgentKeys(agent.agent_id).hook_channels), [])
    return (
        frozenset(c for c in last if isinstance(c, str))
        if isinstance(last, list)
        else (frozenset())
    )


def registry_state(rt: Runtime, agent: AgentRecord) -> RegistryState:
    """This agent's hook channels, fresh per C41, and whether the registry loaded."""
    root = agent.root
    key = _registry_stat(root)
    with _cache_lock:
        cached = _cache.get(_cache_key(agent))
    if cached is not None and cached[0] == key:
        return cached[1]
    loaded = load_registry(root)
    redis_key = AgentKeys(agent.agent_id).hook_channels
    if loaded.error is not None:
        # Logged once per registry state; the last good set stands in meanwhile.
        log.event("notification_hook_registry_error", agent_id=agent.agent_id, error=loaded.error)
        state = RegistryState(_last_loaded(rt, agent), loaded=False)
    else:
        channels = frozenset(c for c in map(_hook_channel, loaded.manifests) if c is not None)
        encoded = json.dumps(sorted(channels))
        if rt.redis.get(redis_key) != encoded.encode():
            rt.redis.set(redis_key, encoded)
        state = RegistryState(channels, loaded=True)
    with _cache_lock:
        _cache[_cache_key(agent)] = (key, state)
    return state


def hook_channels(rt: Runtime, agent: AgentRecord) -> frozenset[str]:
    """This agent's hook channels, fresh per C41."""
    return registry_state(rt, agent).hook_channels


def allowlist(rt: Runtime, agent: AgentRecord) -> Allowlist:
    return Allowlist(hook_channels(rt, agent))
