"""``flush_channel``: drain a channel's buffer into its mirror file (channels.md C14-C16).

Under the ``channel:<name>`` lock a run settles any pending intent, takes up to
500 records from the buffer head (without removing them), applies them, stores
an *intent* ``{pre_sha256, post_sha256, count, through_seq}``, writes the file
once, then in one script removes the applied records, records the applied
sequence and clears the intent. A crash anywhere leaves either the intent
(settled by the next mutation: committed if the file holds ``post_sha256``,
discarded otherwise so the still-buffered records apply again) or nothing:
no record is lost and none lands twice.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from tidings.jobs import metrics
from tidings.jobs.channels import dead_letters, names, system_events
from tidings.jobs.channels.mirror import Record, apply_batch, parse_mirror, retained_bound
from tidings.jobs.runtime import Runtime
from tidings.store import faults, locks, rates, replies
from tidings.store.errors import UnsafePathError
from tidings.store.files import atomic_write, safe_read
from tidings.store.jsonfmt import compact, sha256_hex
from tidings.store.jsonread import loads_or
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord
from tidings.store.scripts import channels as channel_scripts

#: C14: records taken per batch.
BATCH_RECORDS = 500
#: C14: batches per run before the run re-enqueues itself.
BATCHES_PER_RUN = 50


class Flushed(TypedDict):
    """C14: a run that drained the buffer, or re-enqueued itself after 50 batches."""

    status: Literal["ok"]
    channel: str
    applied: int
    requeued: bool


class FlushRefused(TypedDict):
    """C16: the mirror's path is unsafe; the records stay buffered."""

    status: Literal["error"]
    reason: Literal["unsafe_path"]
    channel: str
    applied: int


def channel_file(channel: str) -> str:
    return f".notification/{channel}.json"


def _current_sha(agent: AgentRecord, channel: str) -> tuple[str, bytes | None]:
    outcome = safe_read(agent.root, channel_file(channel))
    if outcome.kind == "absent":
        return "absent", None
    if outcome.kind == "not_regular":
        raise UnsafePathError(f"{channel_file(channel)} {outcome.what or 'is not a regular file'}")
    if not outcome.ok:
        # Unreadable or over 1 MiB: the mirror starts empty (C12), and the sha
        # recorded in the intent can never match, so a crash discards it.
        return f"unreadable:{outcome.error}", None
    return sha256_hex(outcome.data), outcome.data


def _commit(rt: Runtime, agent: AgentRecord, channel: str, through_seq: int) -> bool:
    """C15 commit; true when it found the buffer drained and ended the run."""
    return channel_scripts.commit_flush(
        rt.scripts,
        agent.agent_id,
        channel,
        through_seq=through_seq,
        flag_ttl=rt.settings.flush_flag_ttl,
    )[1]


def settle_intent(rt: Runtime, agent: AgentRecord, channel: str) -> str | None:
    """C15: finish or discard a crashed run's intent. Call with the channel lock held."""
    k = AgentKeys(agent.agent_id)
    raw = rt.redis.get(k.intent(channel))
    if raw is None:
        return None
    intent = loads_or(raw, None)
    sha, _ = _current_sha(agent, channel)
    if isinstance(intent, dict) and sha == intent.get("post_sha256"):
        _commit(rt, agent, channel, int(intent["through_seq"]))
        return "committed"
    rt.redis.delete(k.intent(channel))
    return "discarded"


def _flush_batch(rt: Runtime, agent: AgentRecord, channel: str) -> tuple[int, bool]:
    """One locked batch: the number of records applied, and whether the run ended (the
    buffer drained). A crashed run's intent and the batch are read in one round trip."""
    k = AgentKeys(agent.agent_id)
    with rt.redis.pipeline(transaction=False) as pipe:
        pipe.get(k.intent(channel))
        pipe.lrange(k.buffer(channel), 0, BATCH_RECORDS - 1)
        intent, raw = pipe.execute()
    if intent is not None:  # only after a crash: settle it, then read the batch again
        settle_intent(rt, agent, channel)
        raw = rt.redis.lrange(k.buffer(channel), 0, BATCH_RECORDS - 1)
    if not raw:
        return 0, channel_scripts.release_flush(rt.scripts, agent.agent_id, channel)
    records = [Record.decode(replies.data(item)) for item in raw]
    pre_sha, data = _current_sha(agent, channel)
    mirror = apply_batch(
        parse_mirror(data), records, channel, retained_bound(agent, channel), rt.clock.now()
    )
    encoded = compact(mirror).encode("utf-8")
    through_seq = records[-1].seq
    intent_record = {
        "pre_sha256": pre_sha,
        "post_sha256": sha256_hex(encoded),
        "count": len(records),
        "through_seq": through_seq,
    }
    rt.redis.set(k.intent(channel), compact(intent_record))
    faults.reach("flush.before_write")
    atomic_write(agent.root, channel_file(channel), encoded)
    faults.reach("flush.after_write")
    drained = _commit(rt, agent, channel, through_seq)
    metrics.flush_written(len(records))
    rates.count(rt.control, rates.EVENTS, len(records), rt.clock.now())
    return len(records), drained


def flush_channel(rt: Runtime, agent: AgentRecord, channel: str) -> Flushed | FlushRefused:
    """C14: loop batches until the buffer is drained, or re-enqueue after 50."""
    applied = 0
    for _ in range(BATCHES_PER_RUN):
        try:
            with locks.hold(agent.root, f"channel:{channel}"):
                count, ended = _flush_batch(rt, agent, channel)
        except UnsafePathError as exc:
            _warn_unsafe(rt, agent, channel, exc.message)
            return {
                "status": "error",
                "reason": "unsafe_path",
                "channel": channel,
                "applied": applied,
            }
        if ended:
            if applied and not count:  # a commit that ends the run revives in its script
                dead_letters.revive(rt, agent, channel)
            return {
                "status": "ok",
                "channel": channel,
                "applied": applied + count,
                "requeued": False,
            }
        applied += count
    rt.dispatch.flush_channel(agent, channel)
    return {"status": "ok", "channel": channel, "applied": applied, "requeued": True}


def _warn_unsafe(rt: Runtime, agent: AgentRecord, channel: str, problem: str) -> None:
    """C16, C51: the records stay buffered; the agent hears once what is in the way."""
    if channel == names.SYSTEM:
        return
    system_events.notify(
        rt,
        agent,
        source="notification_store",
        ref_id=f"unsafe_channel:{channel}",
        body=(
            f"Channel '{channel}' cannot be written: {problem}. "
            "Its notifications stay buffered until that is removed."
        ),
        idempotency_key=f"unsafe_channel:{channel}",
    )
