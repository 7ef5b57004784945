"""Redis key names.

Every key of one agent carries the hash tag ``{a:<agent_id>}`` so that all of an
agent's keys live in one Cluster slot and a Lua script may touch them together.
Host-scoped keys (the host's agent index, its scheduler's job store and lease)
carry ``{h:<host>}``. Hub-wide keys (the host set, dismiss guards, worker presence)
are plain and belong to the control store (interfaces.md "Past one Redis").
"""

from __future__ import annotations

import hashlib

#: Prefix of hub-wide keys and the dramatiq namespace.
NAMESPACE = "tidings"

#: Set of every host an agent was registered on or a scheduler ran on (control store).
HOSTS = f"{NAMESPACE}:hosts"

#: The registry before issue 25, one hash agent_id -> record JSON, and its change
#: counter: read only to migrate it (:mod:`tidings.store.registry_migration`).
LEGACY_AGENTS = f"{NAMESPACE}:agents"
LEGACY_AGENTS_VERSION = f"{NAMESPACE}:agents:version"
#: The legacy version counter the last migration copied (the legacy keys stay for old
#: processes during a rolling upgrade).
LEGACY_MIGRATED = f"{NAMESPACE}:agents:migrated"

#: Hash of channel -> suggested verb (channels.md C37).
DISMISS_GUARDS = f"{NAMESPACE}:dismiss_guards"


def host_tag(host: str) -> str:
    return "{h:" + host + "}"


def agent_record(agent_id: str) -> str:
    """String: the agent's :class:`~tidings.store.models.AgentRecord` JSON."""
    return "{a:" + agent_id + "}:record"


def host_agents(host: str) -> str:
    """Hash agent id -> workdir of the agents registered on ``host`` (an index: the
    agent's record is the truth, see :mod:`tidings.store.registry`)."""
    return f"{host_tag(host)}:agents"


def host_workdirs(host: str) -> str:
    """Hash workdir -> agent id of the agents registered on ``host``."""
    return f"{host_tag(host)}:workdirs"


def host_agents_version(host: str) -> str:
    """Counter moved by every change of the host's index; the host's scheduler re-reads
    its agents when it moves (channels.md C27)."""
    return f"{host_tag(host)}:agents:version"


def scheduler_jobs(host: str) -> str:
    return f"{host_tag(host)}:aps.jobs"


def scheduler_run_times(host: str) -> str:
    return f"{host_tag(host)}:aps.run_times"


def scheduler_leader(host: str) -> str:
    return f"{host_tag(host)}:scheduler:leader"


def sync_running(host: str, *, changed: bool = False) -> str:
    """Set while the host's sync tick — a full scan, or one over the agents that
    changed — is queued or running (channels.md C27)."""
    return f"{host_tag(host)}:sync:running" + (":changed" if changed else "")


def sync_due(host: str) -> str:
    """Sorted set agent id -> Unix s from which the tick must visit that agent whatever
    its files do: a live delay's deadline (delay.md D9), or 0 after an unfinished visit."""
    return f"{host_tag(host)}:sync:due"


def sync_last(host: str) -> str:
    """JSON ``{"at", "agents", "woke"}`` of the host's last finished sync tick."""
    return f"{host_tag(host)}:sync:last"


#: Hash of ``<host> <worker id>`` -> epoch of that worker process's last heartbeat.
WORKERS = f"{NAMESPACE}:workers"


class AgentKeys:
    """Key builder for one agent."""

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        self.tag = "{a:" + agent_id + "}"

    def _k(self, *parts: str) -> str:
        return ":".join((self.tag, *parts))

    # coalescing buffers (channels.md C13-C15)
    def buffer(self, channel: str) -> str:
        return self._k("buf", channel)

    def flush_flag(self, channel: str) -> str:
        return self._k("flushflag", channel)

    def sequence(self, channel: str) -> str:
        return self._k("seq", channel)

    def applied(self, channel: str) -> str:
        return self._k("applied", channel)

    def intent(self, channel: str) -> str:
        return self._k("intent", channel)

    def dedup(self, channel: str, key: str) -> str:
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
        return self._k("dedup", channel, digest)

    def push_receipt(self, token: str) -> str:
        """What one producer call's push answered, kept while the client may re-send it."""
        return self._k("pushed", token)

    @property
    def dead_flushes(self) -> str:
        """Set of channels whose flush was dead-lettered (channels.md C52)."""
        return self._k("flush", "dead")

    @property
    def buffered_channels(self) -> str:
        """Set of channels that may have buffered records (for the stranded-flush scan)."""
        return self._k("buffered")

    # delivery and wake (channels.md C23-C28)
    @property
    def delivered_fp(self) -> str:
        return self._k("fp", "delivered")

    @property
    def wake_fp(self) -> str:
        return self._k("fp", "wake")

    @property
    def wake_stream(self) -> str:
        return self._k("wake")

    @property
    def wake_cursor(self) -> str:
        return self._k("wake", "cursor")

    @property
    def act_generation(self) -> str:
        """Bumped when an own act of the agent starts and ends (channels.md C53)."""
        return self._k("acts", "gen")

    @property
    def acts_in_flight(self) -> str:
        """Sorted set: token of each own act under way -> its expiry epoch (C53)."""
        return self._k("acts", "live")

    @property
    def blocked(self) -> str:
        return self._k("blocked")

    @property
    def blocked_overflow(self) -> str:
        """How many blocked channels the overflow warning last named (channels.md C50)."""
        return self._k("blocked", "overflow")

    @property
    def oversized(self) -> str:
        return self._k("oversized")

    @property
    def hook_channels(self) -> str:
        """The last successfully loaded hook-channel set (channels.md C41)."""
        return self._k("hooks", "channels")

    @property
    def persistent_spills(self) -> str:
        """sha256 of a persistent spill's canonical text -> basename (block-cap.md B11)."""
        return self._k("spills", "persistent")

    @property
    def persistent_spill_order(self) -> str:
        return self._k("spills", "persistent", "order")
