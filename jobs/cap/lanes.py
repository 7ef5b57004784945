"""The block cap as jobs use it (block-cap.md): sanitise, then cap each lane.

The pure capping lives in :mod:`tidings.jobs.cap.attention` and :mod:`tidings.jobs.cap.persistent`;
here the effective cap is resolved (B1, read on every build) and the spillers
are bound to the agent's workdir and Redis index.
"""

from __future__ import annotations

from collections.abc import Hashable
from functools import partial

from tidings.jobs import limits
from tidings.jobs.cap import memo as cap_memo
from tidings.jobs.cap import spill, spill_persistent
from tidings.jobs.cap.attention import Lane, cap_lane
from tidings.jobs.cap.persistent import Block, cap_block
from tidings.jobs.runtime import Runtime
from tidings.store.models import AgentRecord

#: B4: display names of the known IM lanes; others use the lane key itself.
IM_NAMES = {"telegram": "Telegram", "wechat": "WeChat", "feishu": "Feishu", "whatsapp": "WhatsApp"}
#: B4: envelope keys a sanitised entry keeps from the original.
KEPT_KEYS = ("icon", "priority", "published_at")
EMAIL_INSTRUCTIONS = "Email content is in _meta.agent_meta.notifications.persistent.email."
IM_INSTRUCTIONS = "Message content is in _meta.agent_meta.notifications.persistent.mcp.{im}."


def _ids(records: object) -> list[object]:
    if not isinstance(records, list | tuple):
        return []
    return [r["id"] for r in records if isinstance(r, dict) and "id" in r]


def _pointer(
    original: object, header: str, data: dict[str, list[object]], instructions: str
) -> dict[str, object]:
    entry: dict[str, object] = {"header": header, "data": data, "instructions": instructions}
    if isinstance(original, dict):
        entry.update({k: original[k] for k in KEPT_KEYS if k in original})
    return entry


def sanitise_attention(attention: Lane, persistent: Block | None) -> Lane:
    """B4: attention entries of lanes the persistent block carries point there instead.

    Returns ``attention`` itself when nothing is replaced.
    """
    if not isinstance(persistent, dict):
        return attention
    pointers: Lane = {}
    email = persistent.get("email")
    if isinstance(email, dict) and "email" in attention:
        ids = email.get("email_ids")
        email_ids = list(ids) if isinstance(ids, list | tuple) else _ids(email.get("emails"))
        pointers["email"] = _pointer(
            attention["email"], "Email event", {"email_ids": email_ids}, EMAIL_INSTRUCTIONS
        )
    mcp = persistent.get("mcp")
    for im, lane in mcp.items() if isinstance(mcp, dict) else ():
        channel = f"mcp.{im}"
        if isinstance(lane, dict) and channel in attention:
            pointers[channel] = _pointer(
                attention[channel],
                f"{IM_NAMES.get(im, im)} event",
                {"message_ids": _ids(lane.get("messages"))},
                IM_INSTRUCTIONS.format(im=im),
            )
    if not pointers:
        return attention
    return {name: pointers.get(name, payload) for name, payload in attention.items()}


def cap_attention(
    rt: Runtime,
    agent: AgentRecord,
    lane: Lane,
    cap: int | None = None,
    content_key: Hashable | None = None,
) -> Lane:
    """B6-B14: the attention lane within the effective cap, spilled to ``logs/`` if cut.

    ``content_key`` identifies the lane's content (see :mod:`tidings.jobs.cap.memo`); with
    it, an unchanged oversized lane is not capped again.
    """
    limit = cap if cap is not None else limits.max_chars(agent.root)
    key = (agent.workdir, limit, content_key)
    if content_key is not None:
        remembered = cap_memo.memo.get(agent.root, key)
        if remembered is not None:
            return remembered
    spilled: list[tuple[str, spill.Spill]] = []

    def spiller(request: spill.SpillRequest) -> spill.Spill:
        outcome = spill.spill_attention(agent.root, request)
        spilled.append((request.digest, outcome))
        return outcome

    capped = cap_lane(lane, limit, spiller)
    if content_key is not None and spilled:
        cap_memo.memo.put(key, capped, *spilled[0])
    return capped


def cap_persistent(rt: Runtime, agent: AgentRecord, block: Block, cap: int | None = None) -> Block:
    """B11, B15-B17: the persistent block within the effective cap, spilled if cut."""
    limit = cap if cap is not None else limits.max_chars(agent.root)
    spiller = partial(
        spill_persistent.spill_persistent,
        agent.root,
        index=spill_persistent.RedisSpillIndex(rt, agent),
        now=rt.clock.now(),
    )
    return cap_block(block, limit, spiller)
