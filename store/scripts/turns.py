"""Typed calls of the turn-slot scripts (memory-inbox.md M43 step 1, M47, M53)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from tidings.store.inbox_keys import TURN_ATTRIBUTES, InboxKeys
from tidings.store.scripts import Scripts, outcome, parts

BeginOutcome = Literal["ok", "busy", "expired"]
SideEffectOutcome = Literal["ok", "unknown_turn", "turn_expired", "turn_finished"]
_BEGIN: tuple[BeginOutcome, ...] = get_args(BeginOutcome)
_SIDE_EFFECT: tuple[SideEffectOutcome, ...] = get_args(SideEffectOutcome)


@dataclass(frozen=True)
class Began:
    """``ok`` (the slot is the new turn's), or ``busy`` / ``expired`` with the
    ``holder`` turn: an open turn within its lease, or one that must first be recovered.
    Only ``ok`` writes."""

    outcome: BeginOutcome
    holder: str | None = None


def begin(
    scripts: Scripts,
    agent_id: str,
    *,
    turn_id: str,
    kind: str,
    now_ms: int,
    lease_ms: int,
    turns_kept: int,
) -> Began:
    """M43 step 1, M53: take the agent's turn slot; old turn records are trimmed."""
    k = InboxKeys(agent_id)
    reply = parts(
        "turn_begin",
        scripts(
            "turn_begin",
            [k.turn_slot, k.turns, k.turn_order],
            [turn_id, kind, now_ms, lease_ms, turns_kept, " ".join(TURN_ATTRIBUTES)],
        ),
    )
    known = outcome("turn_begin", reply, _BEGIN)
    return Began(known, reply[1] if len(reply) > 1 else None)


@dataclass(frozen=True)
class SideEffectMarked:
    """``ok`` with the ``marked`` items still running under the turn, or why not."""

    outcome: SideEffectOutcome
    marked: list[str]


def mark_side_effect(
    scripts: Scripts, agent_id: str, *, turn_id: str, now_ms: int, now_iso: str
) -> SideEffectMarked:
    """M47: stamp the turn and its running items (the first stamp wins)."""
    k = InboxKeys(agent_id)
    reply = parts(
        "turn_side_effect",
        scripts(
            "turn_side_effect",
            [k.admissions, k.turns],
            [turn_id, now_ms, now_iso],
        ),
    )
    return SideEffectMarked(outcome("turn_side_effect", reply, _SIDE_EFFECT), reply[1:])
