"""Typed calls of the committed-fingerprint and wake-stream scripts (channels.md C23,
C26, C27, C36). Keys come from the agent's :class:`AgentKeys`."""

from __future__ import annotations

from tidings.store import replies
from tidings.store.keys import AgentKeys
from tidings.store.scripts import Scripts, number


def swap_fingerprints(
    scripts: Scripts, agent_id: str, *, expected_delivered: str, delivered: str,
    expected_wake: str, wake: str,
) -> bool:
    """Replace both committed fingerprints if neither moved since read (``""`` = absent);
    false when another writer got there first."""
    k = AgentKeys(agent_id)
    return number("fp_swap", scripts(
        "fp_swap", [k.delivered_fp, k.wake_fp],
        [expected_delivered, delivered, expected_wake, wake],
    )) == 1


def signal(
    scripts: Scripts, agent_id: str, *, expected_wake: str, wake: str, delivered: str,
    kind: str, entry_json: str, stream_length: int,
) -> str | None:
    """C26/C27: append a wake entry and commit both fingerprints; the new stream id, or
    ``None`` when the committed wake fingerprint moved (nothing written)."""
    k = AgentKeys(agent_id)
    reply = scripts(
        "wake_signal", [k.wake_fp, k.delivered_fp, k.wake_stream],
        [expected_wake, wake, delivered, kind, entry_json, stream_length],
    )
    return replies.text_or_none(reply)


def advance_cursor(scripts: Scripts, agent_id: str, *, expected: str, cursor: str) -> bool:
    """C26: move the wake cursor from ``expected`` (``""`` = absent) to ``cursor``; false
    when another reader consumed first."""
    return number("wake_cursor", scripts(
        "wake_cursor", [AgentKeys(agent_id).wake_cursor], [expected, cursor],
    )) == 1
