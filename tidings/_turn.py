"""The :class:`Turn` that ``prepare_turn`` returns (memory-inbox.md M43)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the jobs load pygit2; a Turn is built only after they ran
    from tidings.jobs.cap import Lane
    from tidings.jobs.inbox import Item
    from tidings.jobs.turns import PreparedTurn, TurnMemory


@dataclass(frozen=True)
class Turn:
    """One prepared turn: what to put under the turn message, and how to finish it.

    ``inbox`` holds the claimed items (full summaries); ``inbox_text`` is the text for
    the bottom of the turn message; ``attention`` the capped attention lane;
    ``memory`` the pre-turn observation result (``{"status": "skipped"}`` for kinds
    that do not observe).
    """

    turn_id: str
    kind: str
    inbox: list[Item]
    inbox_text: str
    attention: Lane
    memory: TurnMemory
    lease_expires_at: str

    @classmethod
    def from_result(cls, result: PreparedTurn) -> Turn:
        return cls(
            turn_id=result["turn_id"],
            kind=result["kind"],
            inbox=list(result["inbox"]),
            inbox_text=result["inbox_text"],
            attention=dict(result["attention"]),
            memory=result["memory"].copy(),
            lease_expires_at=result["lease_expires_at"],
        )

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def turn_id_of(turn: object) -> object:
    """The turn id of a :class:`Turn`, a turn-id string or a dict carrying one."""
    if isinstance(turn, Turn):
        return turn.turn_id
    if isinstance(turn, Mapping):
        return turn.get("turn_id")
    return turn
