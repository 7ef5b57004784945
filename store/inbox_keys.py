"""Redis keys of an agent's inbox, turns and memory checkpoint (memory-inbox.md M9).

Every key carries the agent's hash tag ``{a:<agent_id>}``. Admissions and turn
records are flattened into one hash each, one field per ``<id>:<attribute>``, so
a Lua script reads and writes single attributes without decoding JSON.
"""

from __future__ import annotations

from tidings.store.keys import AgentKeys

#: Attributes of an admission (M1), stored as ``<event_id>:<attribute>`` fields.
#: ``memory`` is "1" for memory-change items; ``key`` is the idempotency key's digest.
ADMISSION_ATTRIBUTES = (
    "state",
    "seq",
    "attempts",
    "claimed_at",
    "turn_id",
    "side_effect_started_at",
    "handled_at",
    "ignored_at",
    "memory",
    "key",
)

#: Attributes of a turn record, stored as ``<turn_id>:<attribute>`` fields.
TURN_ATTRIBUTES = (
    "state",
    "kind",
    "lease_ms",
    "claimed",
    "memory_status",
    "memory_version",
    "side_effect_at",
    "result",
)


class InboxKeys:
    """Key builder for one agent's inbox, turn slot, checkpoint and observation lock."""

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        self._agent = AgentKeys(agent_id)
        self.tag = self._agent.tag

    def _k(self, *parts: str) -> str:
        return ":".join((self.tag, *parts))

    @property
    def events(self) -> str:
        """Hash event_id -> immutable event JSON."""
        return self._k("inbox", "events")

    @property
    def admissions(self) -> str:
        """Hash ``<event_id>:<attribute>`` -> value."""
        return self._k("inbox", "adm")

    @property
    def selectable(self) -> str:
        """Sorted set of pending and retryable ids by ``seq`` (M44)."""
        return self._k("inbox", "selectable")

    @property
    def running(self) -> str:
        """Sorted set of claimed (running) ids by ``seq`` (M51)."""
        return self._k("inbox", "running")

    @property
    def open(self) -> str:
        """Sorted set of every non-terminal id by ``seq`` (the M8 bound)."""
        return self._k("inbox", "open")

    @property
    def terminal(self) -> str:
        """Sorted set of terminal ids by the time they became terminal (M8 retention)."""
        return self._k("inbox", "terminal")

    @property
    def listing(self) -> str:
        """Sorted set of every retained id by ``created_at`` in ms (M7)."""
        return self._k("inbox", "listing")

    @property
    def sequence(self) -> str:
        """The per-agent admission counter (``seq``)."""
        return self._k("inbox", "seq")

    @property
    def key_index(self) -> str:
        """Hash idempotency-key digest -> event_id (M3)."""
        return self._k("inbox", "keys")

    @property
    def wake_stream(self) -> str:
        """The agent's wake stream (channels.md C26), shared with the channel model."""
        return self._agent.wake_stream

    @property
    def turn_slot(self) -> str:
        """The id of the prepared, unfinished turn (M43, M53)."""
        return self._k("turn", "slot")

    @property
    def turns(self) -> str:
        """Hash ``<turn_id>:<attribute>`` -> value, for recent turns."""
        return self._k("turn", "records")

    @property
    def turn_order(self) -> str:
        """Sorted set of recent turn ids by start time (retention of turn records)."""
        return self._k("turn", "order")

    @property
    def checkpoint(self) -> str:
        """The memory checkpoint hash (M14)."""
        return self._k("memory", "checkpoint")

    @property
    def observe_lock(self) -> str:
        """The per-agent observation lock (M52)."""
        return self._k("memory", "lock")

    @property
    def memory_unavailable(self) -> str:
        """The M13 reason of the last observation, while the registered memory repository
        is unavailable (absent otherwise): what ``tidings status`` and the console show as
        needing attention (interfaces.md, Never silent)."""
        return self._k("memory", "unavailable")

    # -- key lists of the scripts (every key a script touches, in its order) ------

    def item_keys(self) -> list[str]:
        """The keys of the item tables, in the order the inbox scripts expect."""
        return [
            self.events,
            self.admissions,
            self.selectable,
            self.running,
            self.open,
            self.terminal,
            self.listing,
            self.key_index,
        ]
