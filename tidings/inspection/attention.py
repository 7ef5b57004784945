"""The agents that need attention, for ``tidings status`` and the console (interfaces.md,
"Never silent, never wrong"; issue 34's overview list).

An agent needs attention when its registered memory repository is unavailable (the
last observation said so, or its path is gone on this machine), when an unfinished
turn holds its turn slot, or when its live delay is past its deadline with the alarm
still owed. A queue needs attention when it holds dead letters. Everything is read
with counts and ``EXISTS`` (the monitor role's rights), one round trip for all agents:
one ``EXISTS`` per agent, two for an agent with a memory repository
(``bench/status_attention.py``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict

from redis import Redis

from tidings.inspection.agent_status import AgentFigure
from tidings.store.inbox_keys import InboxKeys
from tidings.store.models import AgentRecord

#: Why an agent needs attention, in the order ``attention`` lists them.
MEMORY_UNAVAILABLE = "memory_unavailable"
UNFINISHED_TURN = "unfinished_turn"
OVERDUE_DELAY = "overdue_delay"
#: Why a queue needs attention.
DEAD_LETTERS = "dead_letters"

#: What each word means to an operator (the console and ``tidings status`` print it).
MEANING = {
    MEMORY_UNAVAILABLE: "memory repository unavailable: turns run without the memory "
    'inbox (fix the path, or `tidings agents add --memory-repo ""`)',
    UNFINISHED_TURN: "an unfinished turn holds the turn slot: finish_turn(<id>), or "
    "startup() after an orchestrator crash",
    OVERDUE_DELAY: "a live delay is past its deadline and its alarm is not published yet",
    DEAD_LETTERS: "messages ran out of retries: `tidings dead`",
}


class AttentionRow(TypedDict):
    """One line of the list: an agent (by id) or a queue (by name) and why."""

    kind: Literal["agent", "queue"]
    name: str
    #: The agent's workdir, by whose name the console shows it; ``None`` for a queue.
    workdir: str | None
    host: str | None
    attention: list[str]
    #: Dead letters of a queue; ``None`` for an agent.
    count: int | None


def _repository_gone(path: str) -> bool:
    """The registered work tree is not there (checked where the workdir is)."""
    return not os.path.isdir(path) or not os.path.lexists(os.path.join(path, ".git"))


def mark(redis: Redis, records: Sequence[AgentRecord], figures: Sequence[AgentFigure]) -> None:
    """Complete each figure's ``attention`` (``records`` in the same order)."""
    with redis.pipeline(transaction=False) as pipe:
        for record in records:
            keys = InboxKeys(record.agent_id)
            if record.memory_repo:  # no repository, nothing to be unavailable
                pipe.exists(keys.memory_unavailable)
            pipe.exists(keys.turn_slot)
        flags = iter(pipe.execute())
    for record, figure in zip(records, figures, strict=True):
        found = []
        memory_flag = bool(next(flags)) if record.memory_repo else False
        turn_flag = bool(next(flags))
        memory_gone = bool(
            record.memory_repo and figure["files_here"] and _repository_gone(record.memory_repo)
        )
        if memory_flag or memory_gone:
            found.append(MEMORY_UNAVAILABLE)
        if turn_flag:
            found.append(UNFINISHED_TURN)
        if figure["alarm_overdue"]:
            found.append(OVERDUE_DELAY)
        figure["attention"] = found


def rows(
    agents: Sequence[AgentFigure], queues: Sequence[Mapping[str, object]]
) -> list[AttentionRow]:
    """The list: agents with a reason, then queues with dead letters."""
    found: list[AttentionRow] = [
        {
            "kind": "agent",
            "name": a["agent_id"],
            "workdir": a["workdir"],
            "host": a["host"],
            "attention": list(a["attention"]),
            "count": None,
        }
        for a in agents
        if a["attention"]
    ]
    for queue in queues:
        dead = queue.get("dead")
        if isinstance(dead, int) and dead > 0:
            found.append(
                {
                    "kind": "queue",
                    "name": str(queue["name"]),
                    "workdir": None,
                    "host": None,
                    "attention": [DEAD_LETTERS],
                    "count": dead,
                }
            )
    return found
