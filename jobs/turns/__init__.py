"""The orchestrator's turn (memory-inbox.md): prepare and finish."""

from tidings.jobs.turns.finish import SideEffectMarked, finish_turn, mark_side_effect
from tidings.jobs.turns.prepare import (
    Begun,
    PreparedTurn,
    Startup,
    TurnError,
    TurnMemory,
    begin_turn,
    claim_turn,
    inline_pre_turn,
    prepare_turn,
    skipped,
    startup,
    startup_all,
)

__all__ = [
    "Begun",
    "PreparedTurn",
    "SideEffectMarked",
    "Startup",
    "TurnError",
    "TurnMemory",
    "begin_turn",
    "claim_turn",
    "finish_turn",
    "inline_pre_turn",
    "mark_side_effect",
    "prepare_turn",
    "skipped",
    "startup",
    "startup_all",
]
