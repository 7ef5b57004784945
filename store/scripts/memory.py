"""Typed calls of the memory scripts: the checkpoint commit (memory-inbox.md M40) and
the token lock the observation holds (M52)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from tidings.store.inbox_keys import InboxKeys
from tidings.store.scripts import ScriptReplyError, Scripts, number, outcome, parts

AdmitOutcome = Literal["ok", "conflict", "inbox_full"]
_ADMIT: tuple[AdmitOutcome, ...] = get_args(AdmitOutcome)


@dataclass(frozen=True)
class MemoryAdmitted:
    """``ok`` with the checkpoint's new ``version``; ``conflict`` (the checkpoint moved
    since it was read) and ``inbox_full`` wrote nothing."""

    outcome: AdmitOutcome
    version: int | None = None


def admit(
    scripts: Scripts,
    agent_id: str,
    *,
    read_version: str,
    event_id: str | None,
    event_json: str,
    open_bound: int,
    created_ms: int,
    checkpoint: Mapping[str, str],
) -> MemoryAdmitted:
    """M40: compare the checkpoint's version with ``read_version``, then write the event
    (when ``event_id`` is given) and the advanced ``checkpoint`` fields together."""
    k = InboxKeys(agent_id)
    pairs = [part for name, value in checkpoint.items() for part in (name, value)]
    reply = parts(
        "memory_admit",
        scripts(
            "memory_admit",
            [*k.item_keys(), k.sequence, k.checkpoint],
            [
                read_version,
                "1" if event_id else "0",
                open_bound,
                event_id or "",
                event_json,
                created_ms,
                *pairs,
            ],
        ),
    )
    known = outcome("memory_admit", reply, _ADMIT)
    if known != "ok":
        return MemoryAdmitted(known)
    if len(reply) != 2 or not reply[1].isdigit():
        raise ScriptReplyError(f"memory_admit answered {reply}")
    return MemoryAdmitted(known, int(reply[1]))


def renew_observe_lock(scripts: Scripts, agent_id: str, *, token: str, lease_ms: int) -> bool:
    """M52: extend the observation lock's lease if ``token`` still holds it."""
    key = InboxKeys(agent_id).observe_lock
    return number("lock_renew", scripts("lock_renew", [key], [token, lease_ms])) == 1


def take_over_observe_lock(
    scripts: Scripts, agent_id: str, *, gone_token: str, token: str, lease_ms: int
) -> bool:
    """M52: take the observation lock over from a holder known to be gone, only if the
    lock still holds that holder's token."""
    key = InboxKeys(agent_id).observe_lock
    return (
        number("lock_takeover", scripts("lock_takeover", [key], [gone_token, token, lease_ms])) == 1
    )


def release_observe_lock(scripts: Scripts, agent_id: str, *, token: str) -> bool:
    """M52: delete the observation lock if ``token`` still holds it."""
    key = InboxKeys(agent_id).observe_lock
    return number("lock_release", scripts("lock_release", [key], [token])) == 1
