"""Observing the memory repository and committing what changed (memory-inbox.md M10-M13,
M28 writes, M40-M42, M48, M52).

Under the agent's observation lock: read the checkpoint (keeping its raw
``version``), observe, compare, then commit the event (if one is due) together
with the advanced checkpoint in ONE script that compares the stored version as a
string. A conflict re-reads and recomputes, up to :data:`CAS_ATTEMPTS` times.
Nothing here raises to the caller: every outcome is an M12 result dict.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Literal, Required, TypedDict

from tidings.jobs import log, metrics
from tidings.jobs.ids import new_uuid7
from tidings.jobs.inbox import MAX_OPEN, MEMORY_SOURCE_KIND
from tidings.jobs.memory import availability
from tidings.jobs.memory import checkpoint as memory_checkpoint
from tidings.jobs.memory.checkpoint import decode_checkpoint, encode_checkpoint
from tidings.jobs.memory.comparison import Comparison, compare
from tidings.jobs.memory.content import MemoryPayload, event_content
from tidings.jobs.memory.lock import ObservationBusy, observe_lock
from tidings.jobs.memory.model import Snapshot, TooNew
from tidings.jobs.memory.observation import observe_worktree
from tidings.jobs.memory.owned import split_owned
from tidings.jobs.runtime import Runtime
from tidings.store import faults, refusals, replies
from tidings.store.inbox_keys import InboxKeys
from tidings.store.jsonfmt import compact, utc_stamp_ms
from tidings.store.models import AgentRecord
from tidings.store.scripts import ScriptReplyError
from tidings.store.scripts import memory as memory_scripts

#: M40: compare-and-set attempts before ``checkpoint_conflict``.
CAS_ATTEMPTS = 3
#: M28: categories that are never the agent's own change (M49) and never absorbed.
NOT_ABSORBABLE = frozenset({"repository_replaced", "reobserved"})
#: M48: the statuses of a recorded observation (a finish may reconcile after them).
RECORDED = frozenset({"baseline", "unchanged", "changed"})

#: M12: what an observation ended as.
ObservationStatus = Literal[
    "baseline", "unchanged", "changed", "absorbed", "unavailable", "unstable", "error", "skipped"
]


class ObservationResult(TypedDict, total=False):
    """M12: one observation's answer; ``reason`` appears only when given."""

    status: Required[ObservationStatus]
    trigger: Required[str]
    event_id: Required[str | None]
    checkpoint_version: Required[int | None]
    observed_at: Required[str | None]
    reason: str
    #: The refusal's line, when the store refused the observation (interfaces.md, Never silent).
    message: str


#: M48: the status of a comparison that records no event, by its kind.
RECORDED_AS: dict[str, ObservationStatus] = {"baseline": "baseline", "refresh": "unchanged"}


def result(
    status: ObservationStatus,
    trigger: str,
    *,
    reason: str | None = None,
    event_id: str | None = None,
    checkpoint_version: int | None = None,
    observed_at: str | None = None,
) -> ObservationResult:
    """An M12 result; ``reason`` appears only when given."""
    out: ObservationResult = {
        "status": status,
        "trigger": trigger,
        "event_id": event_id,
        "checkpoint_version": checkpoint_version,
        "observed_at": observed_at,
    }
    if reason is not None:
        out["reason"] = reason
    return out


def observe_memory(rt: Runtime, agent: AgentRecord, trigger: str = "manual") -> ObservationResult:
    """M10/M12: one observation (``startup``, ``pre_turn`` or a manual reason)."""
    return _guarded(rt, agent, trigger, owned=None, reconcile=False)


def observe_at_finish(
    rt: Runtime, agent: AgentRecord, owned: Mapping[str, object] | None
) -> ObservationResult:
    """M48: the finish-turn observation; own changes are absorbed, others admitted."""
    return _guarded(rt, agent, "finish_turn", owned=owned, reconcile=True)


def _guarded(
    rt: Runtime,
    agent: AgentRecord,
    trigger: str,
    *,
    owned: Mapping[str, object] | None,
    reconcile: bool,
) -> ObservationResult:
    if agent.memory_repo is None:
        return result("unavailable", trigger, reason="not_configured")
    started = time.perf_counter()
    outcome = _locked(rt, agent, trigger, owned=owned, reconcile=reconcile)
    availability.note(rt, agent, outcome)
    metrics.observed(trigger, outcome["status"], time.perf_counter() - started)
    if outcome["event_id"] is not None:
        metrics.items_entered("pending")
    return outcome


def _locked(
    rt: Runtime,
    agent: AgentRecord,
    trigger: str,
    *,
    owned: Mapping[str, object] | None,
    reconcile: bool,
) -> ObservationResult:
    try:
        with observe_lock(rt, agent.agent_id):
            for _ in range(CAS_ATTEMPTS):
                outcome = _attempt(rt, agent, trigger, owned, reconcile)
                if outcome is not None:
                    return outcome
            return result("error", trigger, reason="checkpoint_conflict")
    except ObservationBusy:
        return result("error", trigger, reason="observation_busy")
    except Exception as exc:  # M12: never raise to the caller, never fail a turn
        log.event(
            "memory_observation_failed",
            agent_id=agent.agent_id,
            trigger=trigger,
            error=type(exc).__name__,
            detail=str(exc)[:200],
        )
        # a store refusal says so (interfaces.md, Never silent); anything else is a failure
        refused = refusals.refusal(exc, rt.redis)
        if refused is None:
            return result("error", trigger, reason="observation_failed")
        failed = result("error", trigger, reason=refused.reason)
        failed["message"] = refused.message
        return failed


def _attempt(
    rt: Runtime,
    agent: AgentRecord,
    trigger: str,
    owned: Mapping[str, object] | None,
    reconcile: bool,
) -> ObservationResult | None:
    """One read-observe-commit round; ``None`` on a checkpoint conflict."""
    repo = agent.memory_repo
    if repo is None:  # _guarded answered before the lock
        return result("unavailable", trigger, reason="not_configured")
    raw = rt.redis.hgetall(InboxKeys(agent.agent_id).checkpoint)
    read_version = replies.text(raw.get(b"version", b""))
    state = decode_checkpoint(raw) if raw else None
    if isinstance(state, TooNew):
        return result("error", trigger, reason="checkpoint_too_new")
    observed = observe_worktree(
        repo,
        state if isinstance(state, Snapshot) else None,
        now=rt.clock.now(),
        threads=rt.settings.memory_observe_threads,
    )
    if observed.status != "ok":
        return result(observed.status, trigger, reason=observed.reason or observed.status)
    snapshot = observed.snapshot
    if snapshot is None:  # an "ok" observation always carries its snapshot
        raise ValueError("an ok observation without a snapshot")
    comparison = compare(state, snapshot, repo)
    if comparison.kind == "unchanged":
        return result(
            "unchanged",
            trigger,
            checkpoint_version=_version(read_version),
            observed_at=snapshot.observed_at,
        )
    content = None
    if comparison.kind == "changed":
        content = _content(rt, comparison, trigger, owned, reconcile, repo)
    status = RECORDED_AS.get(comparison.kind, "absorbed")
    if content is not None:
        status = "changed"
    return _commit(rt, agent, trigger, snapshot, read_version, content, status)


def _content(
    rt: Runtime,
    comparison: Comparison,
    trigger: str,
    owned: Mapping[str, object] | None,
    reconcile: bool,
    repo: str,
) -> tuple[str, MemoryPayload] | None:
    """The event due for a changed comparison, or ``None`` when it is absorbed (M48)."""
    standing = rt.settings.memory_standing_files
    summary, payload = event_content(comparison, trigger=trigger, standing_files=standing)
    if not reconcile or payload.get("category") in NOT_ABSORBABLE:
        return summary, payload
    if owned is None:
        return None
    rest = split_owned(comparison, dict(owned), repo)
    if rest.kind != "changed":
        return None
    return event_content(rest, trigger=trigger, standing_files=standing)


def _commit(
    rt: Runtime,
    agent: AgentRecord,
    trigger: str,
    snapshot: Snapshot,
    read_version: str,
    content: tuple[str, MemoryPayload] | None,
    status: ObservationStatus,
) -> ObservationResult | None:
    k = InboxKeys(agent.agent_id)
    fields = encode_checkpoint(snapshot, (_version(read_version) or 0) + 1)
    event_id, event = "", ""
    now = rt.clock.now()
    if content is not None:
        event_id = new_uuid7()
        summary, payload = content
        event = compact(
            {
                "event_id": event_id,
                "source_kind": MEMORY_SOURCE_KIND,
                "created_at": utc_stamp_ms(now),
                "observed_at": snapshot.observed_at,
                "summary": summary,
                "payload": payload,
            }
        )
        faults.reach("admit.before_script")
    admitted = memory_scripts.admit(
        rt.scripts,
        agent.agent_id,
        read_version=read_version,
        event_id=event_id or None,
        event_json=event,
        open_bound=MAX_OPEN,
        created_ms=int(now * 1000),
        checkpoint={name: value for name, value in fields.items() if name != "version"},
    )
    if admitted.outcome == "conflict" and event_id and rt.redis.hexists(k.events, event_id):
        # This very commit ran and only its reply was lost: the client re-sent the script
        # after a connection error, and the re-run met its own checkpoint (M40).
        version = (_version(read_version) or 0) + 1
    elif admitted.outcome == "conflict":
        return None
    elif admitted.outcome == "inbox_full":
        return result("error", trigger, reason="inbox_full", observed_at=snapshot.observed_at)
    elif admitted.version is None:
        raise ScriptReplyError(f"memory_admit answered {admitted}")
    else:
        version = admitted.version
    if str(version) == fields["version"]:
        memory_checkpoint.remember(fields, snapshot)
    return result(
        status,
        trigger,
        event_id=event_id or None,
        checkpoint_version=version,
        observed_at=snapshot.observed_at,
    )


def _version(raw: str) -> int | None:
    """The stored version as an integer (``None`` when absent or not an integer)."""
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value >= 0 else None
