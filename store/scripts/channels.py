"""Typed calls of the channel buffer scripts (channels.md C13-C15) and the persistent
spill index (block-cap.md B11). Keys come from the agent's :class:`AgentKeys`."""

from __future__ import annotations

from dataclasses import dataclass

from tidings.store.keys import AgentKeys
from tidings.store.scripts import ScriptReplyError, Scripts, number, parts


@dataclass(frozen=True)
class Pushed:
    """A record queued as ``seq`` (``flag_set``: this push started the flush run), or a
    ``duplicate`` of the event ``first_event_id`` (nothing written)."""

    duplicate: bool
    first_event_id: str | None = None
    seq: int = 0
    flag_set: bool = False


def push(
    scripts: Scripts,
    agent_id: str,
    channel: str,
    *,
    record_json: str,
    flag_ttl: int,
    dedup_key: str | None,
    event_id: str,
    dedup_seconds: int,
    token: str,
    receipt_seconds: int,
) -> Pushed:
    """C13: push one record onto the channel's buffer, deduplicated on ``dedup_key``.
    ``token`` names this call: a re-sent push (the client's retry after a lost reply)
    within ``receipt_seconds`` answers as the first run did and writes nothing."""
    k = AgentKeys(agent_id)
    reply = parts(
        "buffer_push",
        scripts(
            "buffer_push",
            [
                k.buffer(channel),
                k.flush_flag(channel),
                k.sequence(channel),
                k.dedup(channel, dedup_key or ""),
                k.buffered_channels,
                k.push_receipt(token),
            ],
            [
                record_json,
                flag_ttl,
                "1" if dedup_key else "0",
                event_id,
                dedup_seconds,
                channel,
                receipt_seconds,
            ],
        ),
    )
    if reply[0] == "duplicate" and len(reply) == 2:
        return Pushed(True, first_event_id=reply[1])
    if reply[0] == "queued" and len(reply) == 3 and reply[1].isdigit():
        return Pushed(False, seq=int(reply[1]), flag_set=reply[2] == "1")
    raise ScriptReplyError(f"buffer_push answered {reply}")


def commit_flush(
    scripts: Scripts, agent_id: str, channel: str, *, through_seq: int, flag_ttl: int
) -> tuple[int, bool]:
    """C14/C15: drop the applied head records, record ``through_seq`` and clear the
    intent; then end the run if the buffer is drained (C52: a dead-lettered channel
    revives), else renew the flag. Returns how many records were removed and whether
    the run ended."""
    k = AgentKeys(agent_id)
    reply = scripts(
        "flush_commit",
        [
            k.buffer(channel),
            k.applied(channel),
            k.intent(channel),
            k.flush_flag(channel),
            k.buffered_channels,
            k.dead_flushes,
        ],
        [through_seq, flag_ttl, channel],
    )
    if not isinstance(reply, list) or len(reply) != 2:
        raise ScriptReplyError(f"flush_commit answered {reply!r}, not [removed, drained]")
    return number("flush_commit", reply[0]), number("flush_commit", reply[1]) == 1


def release_flush(scripts: Scripts, agent_id: str, channel: str) -> bool:
    """C14: end the flush run if the buffer is still empty (true when released)."""
    k = AgentKeys(agent_id)
    return (
        number(
            "flush_release",
            scripts(
                "flush_release",
                [k.buffer(channel), k.flush_flag(channel), k.buffered_channels],
                [channel],
            ),
        )
        == 1
    )


def claim_stranded(scripts: Scripts, agent_id: str, channel: str, *, flag_ttl: int) -> bool:
    """C15: true when the caller set the lapsed flag of a non-empty buffer and must
    start a flush."""
    k = AgentKeys(agent_id)
    return (
        number(
            "flush_claim_stranded",
            scripts(
                "flush_claim_stranded",
                [k.buffer(channel), k.flush_flag(channel), k.buffered_channels],
                [channel, flag_ttl],
            ),
        )
        == 1
    )


def remember_spill(
    scripts: Scripts, agent_id: str, *, digest: str, name: str, used_at: str, kept: int
) -> int:
    """B11: remember a persistent spill by content; returns how many old entries the
    index (trimmed to ``kept``) evicted."""
    k = AgentKeys(agent_id)
    return number(
        "persistent_spill_remember",
        scripts(
            "persistent_spill_remember",
            [k.persistent_spills, k.persistent_spill_order],
            [digest, name, used_at, kept],
        ),
    )


def join_blocked(scripts: Scripts, agent_id: str, channel: str, *, cap: int) -> int:
    """C28/C50: join the agent's blocked set unless it holds ``cap`` members: 1 joined,
    0 already a member, -1 the set is full."""
    return number(
        "blocked_join",
        scripts(
            "blocked_join",
            [AgentKeys(agent_id).blocked],
            [channel, cap],
        ),
    )
