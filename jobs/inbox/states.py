"""The inbox item's states and every transition between them (memory-inbox.md M5, M6,
M41-M44, M51), in one file as h11 keeps its state machine in ``_state.py``.

An item's state is the field ``<event_id>:state`` of its agent's admissions hash. Only the
Lua scripts of ``store/lua/`` write it, each transition in one script (multi-key changes are
one script); :data:`TRANSITIONS` lists them all, and ``tests/unit/test_inbox_states.py``
checks every ``HSET ... :state`` write of those scripts against it. What a reader sees is
the projection of the stored state (M5): :func:`projected`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: Stored states (the admissions hash).
PENDING: Literal["pending"] = "pending"
RUNNING: Literal["running"] = "running"
RETRYABLE: Literal["retryable"] = "retryable"
NEEDS_REPAIR: Literal["needs-repair"] = "needs-repair"
HANDLED: Literal["handled"] = "handled"
STORED = (PENDING, RUNNING, RETRYABLE, NEEDS_REPAIR, HANDLED)

#: A handled item's mark: which timestamp field its last transition wrote beside the state.
HANDLED_AT, IGNORED_AT = "handled_at", "ignored_at"


@dataclass(frozen=True)
class Transition:
    """``event`` moves an item from one of ``sources`` (``None``: not admitted yet) to
    ``target``, in the script ``store/lua/<script>.lua``, writing ``mark`` beside it."""

    event: str
    script: str
    sources: frozenset[str | None]
    target: str
    mark: str | None = None


def _t(
    event: str, script: str, sources: set[str | None], target: str, mark: str | None = None
) -> Transition:
    return Transition(event, script, frozenset(sources), target, mark)


#: Every transition of an inbox item.
TRANSITIONS: tuple[Transition, ...] = (
    _t("admit", "inbox_admit", {None}, PENDING),  # M3
    _t("admit", "memory_admit", {None}, PENDING),  # M12's admission
    _t("claim", "inbox_claim", {PENDING, RETRYABLE}, RUNNING),  # M43 step 3
    _t("finish_handled", "inbox_finish", {RUNNING}, HANDLED, HANDLED_AT),  # M44
    _t("finish_ignored", "inbox_finish", {RUNNING}, HANDLED, IGNORED_AT),  # M44
    _t("finish_retryable", "inbox_finish", {RUNNING}, RETRYABLE),  # M44
    _t("finish_needs_repair", "inbox_finish", {RUNNING}, NEEDS_REPAIR),  # M44, M42
    _t("ignore", "inbox_ignore", {PENDING, RUNNING, RETRYABLE}, HANDLED, IGNORED_AT),  # M6
    _t("recover_retryable", "inbox_recover", {RUNNING}, RETRYABLE),  # M51
    _t("recover_needs_repair", "inbox_recover", {RUNNING}, NEEDS_REPAIR),  # M51, M42
)

#: M5: stored state -> the state a reader sees (``handled`` with ``ignored_at``: ``ignored``).
PROJECTION = {
    PENDING: "pending",
    RUNNING: "processing",
    RETRYABLE: "deferred",
    NEEDS_REPAIR: "needs-repair",
    HANDLED: "handled",
}
IGNORED = "ignored"
#: M5, M7: every state a reader may see or filter by.
STATES = ("pending", "processing", "deferred", "needs-repair", "handled", IGNORED)


def projected(state: str | None, ignored_at: str | None) -> str:
    """M5: what a reader sees of an item stored in ``state`` (an item admitted a moment
    ago, whose state is not read yet, is ``pending``)."""
    stored = state or PENDING
    if stored == HANDLED and ignored_at:
        return IGNORED
    return PROJECTION.get(stored, stored)
