"""Observing an agent's Git memory repository (memory-inbox.md M12-M39, M45, M49).

Pure functions, no Redis: ``observe_worktree`` takes a snapshot with pygit2,
``encode_checkpoint``/``decode_checkpoint`` move it to and from the checkpoint
hash, ``compare`` classifies it against the checkpoint, ``event_content`` makes
the event, ``split_owned`` removes the agent's own changes and
``render_memory_entry`` coalesces claimed events into one inbox entry.
"""

from tidings.jobs.memory.checkpoint import decode_checkpoint, encode_checkpoint
from tidings.jobs.memory.coalesce import render_memory_entry
from tidings.jobs.memory.comparison import Comparison, compare
from tidings.jobs.memory.content import DEFAULT_STANDING_FILES, event_content
from tidings.jobs.memory.memory_admission import (
    RECORDED,
    ObservationResult,
    observe_at_finish,
    observe_memory,
    result,
)
from tidings.jobs.memory.model import CheckpointState, ObserveResult, Snapshot
from tidings.jobs.memory.observation import observe_worktree
from tidings.jobs.memory.owned import split_owned
from tidings.jobs.memory.registration import repository_problem

__all__ = [
    "DEFAULT_STANDING_FILES",
    "RECORDED",
    "CheckpointState",
    "Comparison",
    "ObservationResult",
    "ObserveResult",
    "Snapshot",
    "compare",
    "decode_checkpoint",
    "encode_checkpoint",
    "event_content",
    "observe_at_finish",
    "observe_memory",
    "observe_worktree",
    "render_memory_entry",
    "repository_problem",
    "result",
    "split_owned",
]
