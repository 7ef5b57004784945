"""Channel writes: ``publish`` and ``append_event`` (channels.md C10, C11, C13).

Both validate, then push one record onto the channel's Redis buffer in one Lua
script that also checks dedup and sets the flush flag if absent. Only the caller
that set the flag starts ``flush_channel``; at low load every record flushes at
once, under load records wait behind one flush run.
"""

from __future__ import annotations

import secrets
from typing import Literal, Required, TypedDict

from tidings.jobs import metrics
from tidings.jobs.channels import allowlisting, names, reserved
from tidings.jobs.channels.envelope import (
    Completed,
    ErrorResult,
    Published,
    PublishResult,
    check_event,
    complete_envelope,
    complete_event,
    failure,
)
from tidings.jobs.channels.mirror import Record
from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.connection import COMMAND_TIMEOUT, FAILOVER_RETRY_SECONDS
from tidings.store.files import is_symlink
from tidings.store.jsonfmt import compact
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord
from tidings.store.scripts import channels as channel_scripts

#: C11: how long a dedup key is remembered.
DEDUP_SECONDS = 24 * 3600
#: C11: how long ``wait=True`` waits for the record to reach the file.
WAIT_SECONDS = 30.0
#: How long a push's receipt is kept (interfaces.md "The default store"): the client
#: re-sends a command whose reply was lost for up to its failover budget, each try
#: waiting up to the command timeout; twice that leaves room for a stalled engine.
RECEIPT_SECONDS = round(2 * (COMMAND_TIMEOUT + FAILOVER_RETRY_SECONDS))


class BufferRecord(TypedDict, total=False):
    """C13: one record pushed onto a channel's buffer (read back by :mod:`.mirror`)."""

    op: Required[Literal["replace", "append"]]
    envelope: dict[str, object]
    event: dict[str, object]
    priority: str | None
    skip_if_ref_exists: bool
    replace_ref: bool


def check_channel(rt: Runtime, agent: AgentRecord, channel: object) -> ErrorResult | None:
    """C6: ``invalid_channel`` unless the channel is allowed for this agent."""
    problem = names.name_error(channel)
    if problem is not None or not isinstance(channel, str):
        return failure("invalid_channel", problem or "channel must be a string", channel=channel)
    if not allowlisting.allowlist(rt, agent).allows(channel):
        return failure("invalid_channel", names.not_allowlisted_message(channel), channel=channel)
    return None


def _unsafe(agent: AgentRecord, channel: str) -> ErrorResult | None:
    if is_symlink(agent.root, f".notification/{channel}.json"):
        return failure(
            "unsafe_path",
            f".notification/{channel}.json or its directory is a symlink",
            channel=channel,
        )
    return None


def publish(
    rt: Runtime, agent: AgentRecord, channel: str, envelope: object, *, wait: bool = False
) -> PublishResult:
    """C10: replace the whole mirror of ``channel`` (a ``system`` mirror carrying an event
    shaped like tidings' own notices is refused, C54)."""
    problem = reserved.producer_envelope_problem(channel, envelope) or check_channel(
        rt, agent, channel
    )
    if problem is None and channel == names.DAEMON:
        problem = failure(
            "invalid_channel", "use publish_daemon_event for the daemon channel", channel=channel
        )
    if problem is None and channel == names.DELAY_ALARM:
        problem = failure(
            "reserved_channel", "delay-alarm is published by tidings only", channel=channel
        )
    if problem is not None:
        return problem
    completed = complete_envelope(envelope, rt.clock.now())
    if not isinstance(completed, Completed):
        return completed
    problem = _unsafe(agent, channel)
    if problem is not None:
        return problem
    record: BufferRecord = {"op": "replace", "envelope": completed.envelope}
    pushed = _push(rt, agent, channel, record, dedup_key=None, event_id="")
    return _settle(rt, agent, channel, pushed, wait, event_id=None)


def append_event(
    rt: Runtime,
    agent: AgentRecord,
    channel: str,
    event: object,
    *,
    priority: str | None = None,
    idempotency_key: str | None = None,
    wait: bool = False,
    skip_if_ref_exists: bool = False,
    replace_ref: bool = False,
) -> PublishResult:
    """C11: append ``event`` to ``data.events`` of ``channel`` with coalescing
    (``replace_ref``: in place of a retained event with the same ``ref_id``, C50)."""
    problem = check_channel(rt, agent, channel)
    if problem is not None:
        return problem
    if channel == names.DAEMON:
        # C11 routes daemon events to the aggregate; that is the caller's step
        # (tidings.jobs.channels.producer), since channels sit below the daemon package.
        return failure(
            "invalid_channel", "use publish_daemon_event for the daemon channel", channel=channel
        )
    if channel == names.DELAY_ALARM:
        return failure(
            "reserved_channel", "delay-alarm is published by tidings only", channel=channel
        )
    problem = check_event(event, priority, idempotency_key)
    if problem is not None or not isinstance(event, dict):
        return problem or failure("invalid_event", "event must be a JSON object")
    problem = _unsafe(agent, channel)
    if problem is not None:
        return problem
    completed = complete_event(event, idempotency_key, rt.clock.now())
    record: BufferRecord = {
        "op": "append",
        "event": completed.event,
        "priority": priority,
        "skip_if_ref_exists": skip_if_ref_exists,
    }
    if replace_ref:
        record["replace_ref"] = True
    pushed = _push(
        rt, agent, channel, record, dedup_key=completed.dedup_key, event_id=completed.event_id
    )
    return _settle(rt, agent, channel, pushed, wait, event_id=completed.event_id)


def _push(
    rt: Runtime,
    agent: AgentRecord,
    channel: str,
    record: BufferRecord,
    *,
    dedup_key: str | None,
    event_id: str,
) -> channel_scripts.Pushed:
    pushed = channel_scripts.push(
        rt.scripts,
        agent.agent_id,
        channel,
        record_json=compact(record),
        flag_ttl=rt.settings.flush_flag_ttl,
        dedup_key=dedup_key,
        event_id=event_id,
        dedup_seconds=DEDUP_SECONDS,
        token=secrets.token_hex(8),
        receipt_seconds=RECEIPT_SECONDS,
    )
    outcome = "duplicate" if pushed.duplicate else "queued"
    metrics.published(record["op"], outcome)
    return pushed


def _settle(
    rt: Runtime,
    agent: AgentRecord,
    channel: str,
    pushed: channel_scripts.Pushed,
    wait: bool,
    *,
    event_id: str | None,
) -> PublishResult:
    if pushed.duplicate:
        return {"status": "ok", "event_id": pushed.first_event_id, "duplicate": True}
    seq, flag_set = pushed.seq, pushed.flag_set
    if flag_set:
        rt.dispatch.flush_channel(agent, channel)
    # Only an inline dispatch (or a wait) can have flushed by now; skip the read otherwise.
    ran_here = flag_set and not rt.dispatch.deferred
    flushed = (ran_here or wait) and applied_through(rt, agent, channel) >= seq
    if wait and not flushed:
        flushed = _wait_applied(rt, agent, channel, seq)
    result: Published = {"status": "ok"}
    if event_id is not None:
        result["event_id"] = event_id
    result["flushed"] = flushed
    return result


def applied_through(rt: Runtime, agent: AgentRecord, channel: str) -> int:
    raw = rt.redis.get(AgentKeys(agent.agent_id).applied(channel))
    return int(raw) if raw else 0


def _wait_applied(rt: Runtime, agent: AgentRecord, channel: str, seq: int) -> bool:
    deadline = rt.clock.monotonic() + WAIT_SECONDS
    pause = 0.002
    while rt.clock.monotonic() < deadline:
        if applied_through(rt, agent, channel) >= seq:
            return True
        rt.clock.sleep(pause)
        pause = min(pause * 2, 0.05)
    return applied_through(rt, agent, channel) >= seq


def buffered_records(rt: Runtime, agent: AgentRecord, channel: str) -> list[dict[str, object]]:
    """The records still waiting in a channel's buffer (for status and tests)."""
    raw = rt.redis.lrange(AgentKeys(agent.agent_id).buffer(channel), 0, -1)
    return [Record.decode(replies.data(item)).body for item in raw]
