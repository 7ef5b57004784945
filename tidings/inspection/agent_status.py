"""One agent's figures for ``tidings status``: its inbox backlog and its live delay.

Strictly read-only: the delay state is read as any reader does, but nothing is
reconciled (an overdue alarm is reported as ``alarm_overdue``, not published)
and an invalid state is not logged; the inbox counts are sorted-set sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, TypedDict

from redis import Redis

from tidings.jobs.consumer import owes_alarm, read_state, structural_problem
from tidings.store.inbox_keys import InboxKeys
from tidings.store.jsonfmt import utc_stamp
from tidings.store.models import AgentRecord

#: Decimal places of ``remaining_seconds``.
REMAINING_DIGITS = 3


class LiveDelay(TypedDict):
    """``live_delay`` of ``tidings status``: what is delayed, until when, who said so."""

    target: str | None
    request_id: str
    deadline_epoch: float
    deadline_at: str
    remaining_seconds: float
    source: Literal["state_file", "scheduler"]


class InboxCounts(TypedDict):
    pending: int
    processing: int
    open: int


class AgentFigure(TypedDict):
    """One agent's row of ``tidings status --json`` (interfaces.md)."""

    agent_id: str
    host: str
    workdir: str
    pending: int
    processing: int
    open: int
    live_delay: LiveDelay | None
    alarm_overdue: bool
    files_here: bool
    #: What needs an operator (interfaces.md, Never silent): ``overdue_delay`` here; the
    #: inspection read adds ``memory_unavailable`` and ``unfinished_turn``.
    attention: list[str]


def delay_figure(
    request_id: str,
    deadline_epoch: float,
    now: float,
    *,
    target: str | None,
    source: Literal["state_file", "scheduler"],
) -> LiveDelay:
    """The ``live_delay`` object: what is delayed, until when, and who said so."""
    return {
        "target": target,
        "request_id": request_id,
        "deadline_epoch": deadline_epoch,
        "deadline_at": utc_stamp(deadline_epoch),
        "remaining_seconds": round(max(deadline_epoch - now, 0.0), REMAINING_DIGITS),
        "source": source,
    }


def delay_from_state(root: Path, now: float) -> tuple[LiveDelay | None, bool]:
    """``(live_delay or None, alarm_overdue)`` from the workdir's delay state (D5, D8)."""
    state = read_state(root).state
    if state is None:
        return None, False
    if (
        structural_problem(state, now) is not None
        or state.deadline <= now
        or state.request_id is None
    ):
        return None, owes_alarm(state, now)
    live = delay_figure(
        state.request_id, state.deadline, now, target=state.target, source="state_file"
    )
    return live, False


def inbox_counts(redis: Redis, agent_ids: Sequence[str]) -> list[InboxCounts]:
    """Per agent (one round trip for all): ``pending`` (selectable: pending and deferred,
    M44), ``processing`` (claimed by a turn) and ``open`` (every non-terminal item, M8)."""
    with redis.pipeline(transaction=False) as pipe:
        for agent_id in agent_ids:
            k = InboxKeys(agent_id)
            pipe.zcard(k.selectable)
            pipe.zcard(k.running)
            pipe.zcard(k.open)
        replies = [int(v) for v in pipe.execute()]
    return [
        {"pending": replies[i], "processing": replies[i + 1], "open": replies[i + 2]}
        for i in range(0, len(replies), 3)
    ]


def agent_figures(redis: Redis, agents: Sequence[AgentRecord], now: float) -> list[AgentFigure]:
    """Per agent: ``agent_id``, ``host``, the inbox counts, ``live_delay`` and
    ``alarm_overdue``; ``files_here`` says whether the workdir is on this machine (else
    the delay is unknown here and the caller may ask the host's scheduler)."""
    figures: list[AgentFigure] = []
    counts = inbox_counts(redis, [agent.agent_id for agent in agents])
    for agent, inbox in zip(agents, counts, strict=True):
        here = agent.root.is_dir()
        live, overdue = delay_from_state(agent.root, now) if here else (None, False)
        figures.append(
            {
                "agent_id": agent.agent_id,
                "host": agent.host,
                "workdir": agent.workdir,
                "pending": inbox["pending"],
                "processing": inbox["processing"],
                "open": inbox["open"],
                "live_delay": live,
                "alarm_overdue": overdue,
                "files_here": here,
                "attention": ["overdue_delay"] if overdue else [],
            }
        )
    return figures
