"""The orchestrator's turn start and host start-up (memory-inbox.md M10, M11, M43-M45,
M51, M53).

``prepare_turn`` takes the turn slot, runs the pre-turn work (observation of an
observing kind, and the attention lane) through a :class:`PreTurn` port — in the
caller for inline agents, as a dramatiq group on the host queue otherwise — then
claims and renders the inbox. Turns are never started by tidings itself (M4).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol, TypedDict, Unpack

from tidings.jobs import log, metrics
from tidings.jobs.cap import Lane
from tidings.jobs.consumer import render_attention
from tidings.jobs.ids import new_uuid7
from tidings.jobs.inbox import MEMORY_SOURCE_KIND, Item, read_items, recover, render_inbox_text
from tidings.jobs.memory import ObservationResult, observe_memory, render_memory_entry
from tidings.jobs.runtime import Runtime
from tidings.store.jsonfmt import utc_stamp_ms
from tidings.store.models import AgentRecord
from tidings.store.scripts import inbox as inbox_scripts
from tidings.store.scripts import turns as turn_scripts

#: M11: turn kinds; the first two observe memory.
OBSERVING_KINDS = ("ordinary", "scheduled")
KINDS = (*OBSERVING_KINDS, "bridge", "peer")
#: M44: items claimed per turn.
MAX_CLAIM = 20
#: Finished turn records kept (a repeated finish_turn returns the stored result).
KEPT_TURNS = 100
#: Attempts at the slot when an expired turn is recovered in between.
_SLOT_ATTEMPTS = 3


class Skipped(TypedDict):
    """M11, M50: the memory of a turn that does not observe."""

    status: Literal["skipped"]


#: A turn's pre-turn memory: the M12 observation, or skipped (M11).
TurnMemory = ObservationResult | Skipped


class ErrorFields(TypedDict, total=False):
    """What a turn refusal names besides its reason."""

    turn_id: str | None
    kind: str


class TurnError(ErrorFields):
    """M43-M51: a refused turn call; changes nothing."""

    status: Literal["error"]
    reason: str
    message: str


class PreparedTurn(TypedDict):
    """M43: a started turn (what :class:`tidings.Turn` is built from)."""

    status: Literal["ok"]
    turn_id: str
    kind: str
    inbox: list[Item]
    inbox_text: str
    attention: Lane
    memory: TurnMemory
    lease_expires_at: str


class Recovered(TypedDict):
    retryable: list[str]
    needs_repair: list[str]


class Startup(TypedDict):
    """M51: a host start-up's recovery and its ``startup`` observation."""

    status: Literal["ok"]
    recovered: Recovered
    memory: ObservationResult


class PreTurn(Protocol):
    """Runs a turn's pre-turn observation (when ``observe``) and attention render."""

    def __call__(self, rt: Runtime, agent: AgentRecord, observe: bool) -> tuple[TurnMemory, Lane]:
        """``(memory result, attention lane)``; never raises."""


def skipped() -> Skipped:
    """M11/M50, memory-inbox.md §9: ``Turn.memory`` of a turn that does not observe is
    exactly ``{"status": "skipped"}``."""
    return {"status": "skipped"}


def safe_attention(rt: Runtime, agent: AgentRecord) -> Lane:
    """The attention lane; a failing render leaves the lane empty, never the turn."""
    try:
        return render_attention(rt, agent)
    except Exception as exc:
        log.event("render_attention_failed", agent_id=agent.agent_id, error=type(exc).__name__)
        return {}


def inline_pre_turn(rt: Runtime, agent: AgentRecord, observe: bool) -> tuple[TurnMemory, Lane]:
    """The in-process :class:`PreTurn` (``inline=True`` agents and unit tests): the
    attention render runs on a thread of its own while this one observes, so the turn
    waits for the longer of the two, not their sum (as the worker group does)."""
    if not observe:
        return skipped(), safe_attention(rt, agent)
    attention: list[Lane] = []
    render = threading.Thread(
        target=lambda: attention.append(safe_attention(rt, agent)),
        name=f"pre-turn-render {agent.agent_id}",
        daemon=True,
    )
    render.start()
    memory = observe_memory(rt, agent, "pre_turn")
    render.join()
    return memory, attention[0] if attention else {}


def error(reason: str, message: str, **fields: Unpack[ErrorFields]) -> TurnError:
    return {"status": "error", "reason": reason, "message": message, **fields}


def _take_slot(rt: Runtime, agent_id: str, turn_id: str, kind: str) -> tuple[TurnError | None, int]:
    """M43 step 1; an expired holder is recovered first (M51). Returns (error, lease ms)."""
    for _ in range(_SLOT_ATTEMPTS):
        now = rt.clock.now()
        lease_ms = int((now + rt.settings.turn_lease_seconds) * 1000)
        began = turn_scripts.begin(
            rt.scripts,
            agent_id,
            turn_id=turn_id,
            kind=kind,
            now_ms=int(now * 1000),
            lease_ms=lease_ms,
            turns_kept=KEPT_TURNS,
        )
        if began.outcome == "ok":
            return None, lease_ms
        holder = began.holder
        if began.outcome == "busy":
            break
        recovered = recover(rt, agent_id, expired_turn=holder)
        log.event(
            "turn_expired_recovered",
            agent_id=agent_id,
            turn_id=holder,
            retryable=recovered["retryable"],
            needs_repair=recovered["needs_repair"],
        )
    return error(
        "turn_in_progress",
        f"an unfinished turn holds the turn slot: finish it with "
        f"finish_turn({holder!r}), or call startup() after an orchestrator crash "
        "(it recovers the turn's items)",
        turn_id=holder,
    ), 0


@dataclass(frozen=True)
class Begun:
    """A turn that holds the slot and waits for its pre-turn work (M43 step 1)."""

    turn_id: str
    kind: str
    lease_ms: int

    @property
    def observing(self) -> bool:
        return self.kind in OBSERVING_KINDS


def begin_turn(rt: Runtime, agent: AgentRecord, kind: str) -> Begun | TurnError:
    """M43 step 1: check the kind and take the slot; an error dict when refused."""
    if kind not in KINDS:
        return error("invalid_kind", f"kind must be one of {', '.join(KINDS)}", kind=kind)
    turn_id = new_uuid7()
    problem, lease_ms = _take_slot(rt, agent.agent_id, turn_id, kind)
    if problem is not None:
        return problem
    return Begun(turn_id, kind, lease_ms)


def claim_turn(
    rt: Runtime, agent: AgentRecord, begun: Begun, memory: TurnMemory, attention: Lane
) -> PreparedTurn | TurnError:
    """M43 after the pre-turn work: claim ≤ 20 items and render the turn."""
    version = memory.get("checkpoint_version")
    claimed = inbox_scripts.claim(
        rt.scripts,
        agent.agent_id,
        turn_id=begun.turn_id,
        now_iso=utc_stamp_ms(rt.clock.now()),
        observing=begun.observing,
        limit=MAX_CLAIM,
        memory_status=memory.get("status", "error"),
        memory_version=version,
    )
    if claimed.lost:
        return error(
            "turn_expired",
            "the turn was recovered before it claimed its items",
            turn_id=begun.turn_id,
        )
    metrics.items_entered("processing", len(claimed.event_ids))
    items = read_items(rt, agent.agent_id, claimed.event_ids)
    return {
        "status": "ok",
        "turn_id": begun.turn_id,
        "kind": begun.kind,
        "inbox": items,
        "inbox_text": inbox_text(items),
        "attention": attention,
        "memory": memory,
        "lease_expires_at": utc_stamp_ms(begun.lease_ms / 1000),
    }


def prepare_turn(
    rt: Runtime,
    agent: AgentRecord,
    kind: str = "ordinary",
    pre_turn: PreTurn = inline_pre_turn,
) -> PreparedTurn | TurnError:
    """M43: take the slot, observe (observing kinds), claim ≤ 20 items, render."""
    begun = begin_turn(rt, agent, kind)
    if not isinstance(begun, Begun):
        return begun
    memory, attention = pre_turn(rt, agent, begun.observing)
    return claim_turn(rt, agent, begun, memory, attention)


def inbox_text(items: list[Item]) -> str:
    """M45: one coalesced memory entry (oldest event first), then the other items."""
    memory = [i for i in items if i["source_kind"] == MEMORY_SOURCE_KIND]
    others = [i for i in items if i["source_kind"] != MEMORY_SOURCE_KIND]
    entry = render_memory_entry(memory) if memory else None
    return render_inbox_text(others, entry, len(memory))


def startup(rt: Runtime, agent: AgentRecord) -> Startup:
    """M51: recover (idempotently), then the ``startup`` observation. Never wakes."""
    recovered = recover(rt, agent.agent_id)
    if recovered["closed_turn"]:
        log.event("startup_closed_turn", agent_id=agent.agent_id, turn_id=recovered["closed_turn"])
    return {
        "status": "ok",
        "recovered": {
            "retryable": recovered["retryable"],
            "needs_repair": recovered["needs_repair"],
        },
        "memory": observe_memory(rt, agent, "startup"),
    }


def startup_all(rt: Runtime, agents: Iterable[AgentRecord]) -> dict[str, Startup | TurnError]:
    """M51: start-up for several agents; a failing one is logged and skipped."""
    results: dict[str, Startup | TurnError] = {}
    for agent in agents:
        try:
            results[agent.agent_id] = startup(rt, agent)
        except Exception as exc:
            log.event("startup_failed", agent_id=agent.agent_id, error=type(exc).__name__)
            results[agent.agent_id] = error("startup_failed", type(exc).__name__)
    return results
