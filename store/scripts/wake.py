"""Typed calls of the committed-fingerprint and wake-stream scripts (channels.md C23,
C26, C27, C36). Keys come from the agent's :class:`AgentKeys`."""

from __future__ import annotations

from tidings.store import replies
from tidings.store.keys import AgentKeys
from tidings.store.scripts import AsyncScripts, Scripts, number


def swap_fingerprints(
    scripts: Scripts,
    agent_id: str,
    *,
    expected_delivered: str,
    delivered: str,
    expected_wake: str,
    wake: str,
) -> bool:
    """Replace both committed fingerprints if neither moved since read (``""`` = absent);
    false when another writer got there first."""
    k = AgentKeys(agent_id)
    return (
        number(
            "fp_swap",
            scripts(
                "fp_swap",
                [k.delivered_fp, k.wake_fp],
                [expected_delivered, delivered, expected_wake, wake],
            ),
        )
        == 1
    )


def signal(
    scripts: Scripts,
    agent_id: str,
    *,
    expected_wake: str,
    wake: str,
    delivered: str,
    kind: str,
    entry_json: str,
    stream_length: int,
    act_generation: str,
    now: float,
) -> str | None:
    """C26/C27/C53: append a wake entry and commit both fingerprints; the new stream id,
    or ``None`` (nothing written) when the committed wake fingerprint moved or an own act
    of the agent began, ran or ended since the tick took ``act_generation``."""
    k = AgentKeys(agent_id)
    reply = scripts(
        "wake_signal",
        [k.wake_fp, k.delivered_fp, k.wake_stream, k.act_generation, k.acts_in_flight],
        [expected_wake, wake, delivered, kind, entry_json, stream_length, act_generation, now],
    )
    return replies.text_or_none(reply)


def advance_cursor(scripts: Scripts, agent_id: str, *, expected: str, cursor: str) -> bool:
    """C26: move the wake cursor from ``expected`` (``""`` = absent) to ``cursor``; false
    when another reader consumed first."""
    return (
        number(
            "wake_cursor",
            scripts(
                "wake_cursor",
                [AgentKeys(agent_id).wake_cursor],
                [expected, cursor],
            ),
        )
        == 1
    )


def begin_own_act(
    scripts: Scripts, agent_id: str, *, token: str, expires_at: float, now: float
) -> int:
    """C53: register an own act as in flight (acts that expired are forgotten) and bump
    the act generation; returns the new generation."""
    k = AgentKeys(agent_id)
    return number(
        "own_act_begin",
        scripts(
            "own_act_begin",
            [k.act_generation, k.acts_in_flight],
            [token, expires_at, now],
        ),
    )


def end_own_act(scripts: Scripts, agent_id: str, *, token: str) -> int:
    """C53: the act leaves the in-flight set and bumps the generation again."""
    k = AgentKeys(agent_id)
    return number(
        "own_act_end",
        scripts(
            "own_act_end",
            [k.act_generation, k.acts_in_flight],
            [token],
        ),
    )


async def advance_cursor_async(
    scripts: AsyncScripts, agent_id: str, *, expected: str, cursor: str
) -> bool:
    """:func:`advance_cursor` on an asyncio client (``tidings.aio``)."""
    return (
        number(
            "wake_cursor",
            await scripts(
                "wake_cursor",
                [AgentKeys(agent_id).wake_cursor],
                [expected, cursor],
            ),
        )
        == 1
    )
