"""Typed calls of the inbox scripts (memory-inbox.md M3-M9, M43-M46, M51).

Each takes the runner and the agent id, computes the agent's hash-tagged keys
(:class:`InboxKeys`) and returns the script's reply parsed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from tidings.store.inbox_keys import ADMISSION_ATTRIBUTES, InboxKeys
from tidings.store.scripts import ScriptReplyError, Scripts, outcome, parts

#: Admission attributes as the retention prelude reads them (space-separated).
_ATTRIBUTES = " ".join(ADMISSION_ATTRIBUTES)

AdmitOutcome = Literal["ok", "replay", "duplicate", "inbox_full"]
IgnoreOutcome = Literal["ok", "unchanged", "not_found", "not_ignorable"]
FinishOutcome = Literal["ok", "done", "unknown_turn", "turn_expired"]
_ADMIT: tuple[AdmitOutcome, ...] = get_args(AdmitOutcome)
_IGNORE: tuple[IgnoreOutcome, ...] = get_args(IgnoreOutcome)
_FINISH: tuple[FinishOutcome, ...] = get_args(FinishOutcome)


def flag(value: bool) -> str:
    """A boolean as the scripts read it."""
    return "1" if value else "0"


@dataclass(frozen=True)
class Admitted:
    """``ok`` (written), ``replay`` (the event id exists), ``duplicate`` (a retained
    item has the key: ``existing`` names it) or ``inbox_full``; only ``ok`` writes."""

    outcome: AdmitOutcome
    existing: str | None = None


def admit(
    scripts: Scripts,
    agent_id: str,
    *,
    event_id: str,
    event_json: str,
    created_ms: int,
    key_digest: str | None,
    open_bound: int,
    wake_entry_json: str | None,
) -> Admitted:
    """M3/M4/M8: admit one event; ``wake_entry_json`` also appends a wake signal."""
    k = InboxKeys(agent_id)
    reply = parts(
        "inbox_admit",
        scripts(
            "inbox_admit",
            [*k.item_keys(), k.sequence, k.wake_stream],
            [
                event_id,
                event_json,
                created_ms,
                key_digest or "",
                open_bound,
                flag(wake_entry_json is not None),
                wake_entry_json or "",
            ],
        ),
    )
    known = outcome("inbox_admit", reply, _ADMIT)
    return Admitted(known, reply[1] if known == "duplicate" else None)


@dataclass(frozen=True)
class Ignored:
    """``ok`` (``previous`` state), ``unchanged`` (already ignored), ``not_found`` or
    ``not_ignorable`` (``previous`` says why)."""

    outcome: IgnoreOutcome
    previous: str | None = None


def ignore(
    scripts: Scripts, agent_id: str, *, event_id: str, now_iso: str, now_ms: int, terminal_kept: int
) -> Ignored:
    """M6: make one item ignored; M8 retention trims the terminal items."""
    reply = parts(
        "inbox_ignore",
        scripts(
            "inbox_ignore",
            InboxKeys(agent_id).item_keys(),
            [event_id, now_iso, now_ms, terminal_kept, _ATTRIBUTES],
        ),
    )
    known = outcome("inbox_ignore", reply, _IGNORE)
    return Ignored(known, reply[1] if len(reply) > 1 else None)


@dataclass(frozen=True)
class Recovered:
    """What M51 recovery did; ``changed`` is false when an ``expired`` recovery found
    the turn already gone or still within its lease."""

    changed: bool
    closed_turn: str | None
    retryable: list[str]
    needs_repair: list[str]


def recover(
    scripts: Scripts, agent_id: str, *, now_ms: int, expired_turn: str | None = None
) -> Recovered:
    """M51: running items become retryable (needs-repair after a side effect) and the
    open turn closes; with ``expired_turn``, only if it holds the slot past its lease."""
    k = InboxKeys(agent_id)
    reply = parts(
        "inbox_recover",
        scripts(
            "inbox_recover",
            [*k.item_keys(), k.turn_slot, k.turns],
            ["expired" if expired_turn else "startup", now_ms, expired_turn or ""],
        ),
    )
    if reply[0] == "noop":
        return Recovered(False, None, [], [])
    if reply[0] != "ok" or len(reply) != 4:
        raise ScriptReplyError(f"inbox_recover answered {reply}")
    return Recovered(True, reply[1] or None, reply[2].split(), reply[3].split())


@dataclass(frozen=True)
class Claimed:
    """The ids a turn claimed, oldest first; ``lost`` when the turn no longer held the
    slot (it was recovered meanwhile) and nothing was claimed."""

    lost: bool
    event_ids: list[str]


def claim(
    scripts: Scripts,
    agent_id: str,
    *,
    turn_id: str,
    now_iso: str,
    observing: bool,
    limit: int,
    memory_status: str,
    memory_version: object,
) -> Claimed:
    """M43 step 3, M44: claim up to ``limit`` selectable items for the turn, recording
    the pre-turn memory status and its checkpoint version (``None`` = none)."""
    k = InboxKeys(agent_id)
    reply = parts(
        "inbox_claim",
        scripts(
            "inbox_claim",
            [*k.item_keys(), k.turn_slot, k.turns],
            [
                turn_id,
                now_iso,
                flag(observing),
                limit,
                memory_status,
                "" if memory_version is None else str(memory_version),
            ],
        ),
    )
    if reply[0] == "lost":
        return Claimed(True, [])
    if reply[0] != "ok":
        raise ScriptReplyError(f"inbox_claim answered {reply}")
    return Claimed(False, reply[1:])


@dataclass(frozen=True)
class Finished:
    """``ok``, or ``done`` for a repeated call, each with the stored result JSON;
    ``unknown_turn`` / ``turn_expired`` wrote nothing."""

    outcome: FinishOutcome
    result_json: str | None = None


def finish(
    scripts: Scripts,
    agent_id: str,
    *,
    turn_id: str,
    now_ms: int,
    now_iso: str,
    ok: bool,
    side_effects: bool,
    memory_json: str,
    not_claimed_json: str,
    terminal_kept: int,
    ignored_claimed: list[str],
) -> Finished:
    """M46 steps 3-4, M8: settle the turn's claimed items and release the slot."""
    k = InboxKeys(agent_id)
    reply = parts(
        "inbox_finish",
        scripts(
            "inbox_finish",
            [*k.item_keys(), k.turn_slot, k.turns],
            [
                turn_id,
                now_ms,
                now_iso,
                flag(ok),
                flag(side_effects),
                memory_json,
                not_claimed_json,
                terminal_kept,
                _ATTRIBUTES,
                *ignored_claimed,
            ],
        ),
    )
    known = outcome("inbox_finish", reply, _FINISH)
    return Finished(known, reply[1] if len(reply) > 1 else None)
