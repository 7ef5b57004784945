"""The orchestrator's turn end (memory-inbox.md M46-M50).

``finish_turn`` validates, reconciles the memory checkpoint (observing turns whose
pre-turn observation was recorded), then settles the claimed items and releases
the slot in one script. The reconcile commits before the marks (M46), so a crash
in between leaves items running (recovered later) and own changes absorbed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, TypedDict

from tidings.jobs import metrics
from tidings.jobs.ids import is_event_id
from tidings.jobs.inbox import MAX_TERMINAL
from tidings.jobs.memory import RECORDED, ObservationResult, observe_at_finish, result
from tidings.jobs.runtime import Runtime
from tidings.jobs.turns.prepare import OBSERVING_KINDS, TurnError, error
from tidings.store import faults, replies
from tidings.store.inbox_keys import InboxKeys
from tidings.store.jsonfmt import compact, utc_stamp_ms
from tidings.store.jsonread import loads_or
from tidings.store.models import AgentRecord
from tidings.store.scripts import inbox as inbox_scripts
from tidings.store.scripts import turns as turn_scripts

#: Most ids accepted in ``ignored`` (more than a turn can claim, with room for slips).
MAX_IGNORED = 1_000
#: (item state entered, the finish result's list of such ids), for the metrics.
SETTLED_STATES = (
    ("handled", "handled"),
    ("ignored", "ignored"),
    ("deferred", "retryable"),
    ("needs-repair", "needs_repair"),
)


class SideEffectMarked(TypedDict):
    """M47: the turn stamped, with the items still running under it."""

    status: Literal["ok"]
    turn_id: str
    marked: list[str]


def owned_problem(owned: object) -> str | None:
    """M49's shape: ``{"paths": {path: id | null}, "commits": [ids], "branch"?: name|null}``."""
    if owned is None:
        return None
    if not isinstance(owned, Mapping) or not set(owned) <= {"paths", "commits", "branch"}:
        return "owned must be an object with paths, commits and optionally branch"
    paths = owned.get("paths", {})
    if not isinstance(paths, Mapping) or not all(
        isinstance(p, str) and (v is None or isinstance(v, str)) for p, v in paths.items()
    ):
        return "owned.paths must map paths to blob ids or null"
    commits = owned.get("commits", [])
    if not isinstance(commits, list | tuple) or not all(isinstance(c, str) for c in commits):
        return "owned.commits must be a list of commit ids"
    if "branch" in owned and owned["branch"] is not None and not isinstance(owned["branch"], str):
        return "owned.branch must be a branch name or null"
    return None


def _ignored_list(ignored: object) -> list[str] | None:
    if isinstance(ignored, str | bytes | Mapping) or not isinstance(ignored, Iterable):
        return None
    ids = list(ignored)
    if len(ids) > MAX_IGNORED or not all(isinstance(i, str) for i in ids):
        return None
    return list(dict.fromkeys(ids))


def _turn(rt: Runtime, agent_id: str, turn_id: str) -> dict[str, str | None]:
    names = ("state", "kind", "lease_ms", "claimed", "memory_status", "result")
    values = rt.redis.hmget(InboxKeys(agent_id).turns, [f"{turn_id}:{n}" for n in names])
    return {n: replies.text_or_none(v) for n, v in zip(names, values, strict=True)}


def _gone(
    rt: Runtime, record: dict[str, str | None], turn_id: str
) -> TurnError | dict[str, object] | None:
    """M46 step 1: unknown, expired or already finished turns (a finished one answers
    its stored result again)."""
    if record["state"] is None:
        return error("unknown_turn", f"no turn {turn_id}", turn_id=turn_id)
    if record["state"] == "done" and record["result"]:
        stored = loads_or(record["result"], None)
        if isinstance(stored, dict):
            return stored
    if record["state"] != "open" or int(record["lease_ms"] or 0) <= rt.clock.now() * 1000:
        return error(
            "turn_expired", "the turn's lease passed; its items were recovered", turn_id=turn_id
        )
    return None


def finish_turn(
    rt: Runtime,
    agent: AgentRecord,
    turn_id: object,
    ok: object = True,
    side_effects: object = False,
    ignored: object = (),
    owned: object = None,
) -> TurnError | dict[str, object]:
    """M46: validate, reconcile (M48-M50), mark the claimed items, release the slot.

    The settled turn is the JSON object the finish script records (and a repeated
    finish answers again), read back as it was written."""
    # The checks in order; the first problem answers.
    if not is_event_id(turn_id):
        return error("invalid_input", "turn must be a Turn or its turn_id")
    if not isinstance(ok, bool) or not isinstance(side_effects, bool):
        return error("invalid_input", "ok and side_effects must be true or false")
    ignored_ids = _ignored_list(ignored)
    if ignored_ids is None:
        return error("invalid_input", "ignored must be a list of event ids")
    problem = owned_problem(owned)
    if problem is not None or not (owned is None or isinstance(owned, Mapping)):
        return error("invalid_input", problem or "owned must be an object")
    record = _turn(rt, agent.agent_id, turn_id)
    gone = _gone(rt, record, turn_id)
    if gone is not None:
        return gone
    if record["kind"] in OBSERVING_KINDS and record["memory_status"] in RECORDED:
        memory = observe_at_finish(rt, agent, owned)
    else:
        memory = result("skipped", "finish_turn")  # M50: the checkpoint is not touched
    faults.reach("finish.after_reconcile")
    return _settle(rt, agent.agent_id, turn_id, record, ok, side_effects, ignored_ids, memory)


def _settle(
    rt: Runtime,
    agent_id: str,
    turn_id: str,
    record: dict[str, str | None],
    ok: bool,
    side_effects: bool,
    ignored: list[str],
    memory: ObservationResult,
) -> TurnError | dict[str, object]:
    claimed = set((record["claimed"] or "").split())
    not_claimed = [i for i in ignored if i not in claimed]
    now = rt.clock.now()
    finished = inbox_scripts.finish(
        rt.scripts,
        agent_id,
        turn_id=turn_id,
        now_ms=int(now * 1000),
        now_iso=utc_stamp_ms(now),
        ok=ok,
        side_effects=side_effects,
        memory_json=compact(memory),
        not_claimed_json=compact(not_claimed),
        terminal_kept=MAX_TERMINAL,
        ignored_claimed=[i for i in ignored if i in claimed],
    )
    if finished.outcome == "unknown_turn":
        return error("unknown_turn", f"no turn {turn_id}", turn_id=turn_id)
    if finished.outcome == "turn_expired":
        return error(
            "turn_expired", "the turn's lease passed; its items were recovered", turn_id=turn_id
        )
    loaded = loads_or(finished.result_json or None, {})
    settled: dict[str, object] = loaded if isinstance(loaded, dict) else {}
    for state, field in SETTLED_STATES:
        ids = settled.get(field)
        metrics.items_entered(state, len(ids) if isinstance(ids, list) else 0)
    return settled


def mark_side_effect(
    rt: Runtime, agent: AgentRecord, turn_id: object
) -> SideEffectMarked | TurnError:
    """M47: stamp ``side_effect_started_at`` on the turn and its running items."""
    if not is_event_id(turn_id):
        return error("invalid_input", "turn must be a Turn or its turn_id")
    now = rt.clock.now()
    marked = turn_scripts.mark_side_effect(
        rt.scripts,
        agent.agent_id,
        turn_id=turn_id,
        now_ms=int(now * 1000),
        now_iso=utc_stamp_ms(now),
    )
    if marked.outcome != "ok":
        messages = {
            "unknown_turn": f"no turn {turn_id}",
            "turn_expired": "the turn's lease passed; its items were recovered",
            "turn_finished": "the turn is already finished",
        }
        return error(marked.outcome, messages[marked.outcome], turn_id=turn_id)
    return {"status": "ok", "turn_id": turn_id, "marked": marked.marked}
