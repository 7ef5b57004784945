"""The agent's own acts never wake it, however a tick interleaves (channels.md C23, C53).

An own act (a delay, a cancel, a dismissal) runs inside :func:`own_act`: before
it changes any state it bumps the agent's act generation and registers as in
flight; after it has committed the wake fingerprint it leaves and bumps the
generation again. The sync tick takes the generation before it reads anything
(:func:`generation`), and its wake script appends a signal only if the
generation is unchanged and no act is in flight. A tick that read between an
act's state change and its commit therefore stops without waking; the next tick
compares with what the act committed. Producers' changes and alarms are not own
acts: they still wake, one tick later at most.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord
from tidings.store.scripts import wake as wake_scripts

#: How long (s) an act that died mid-way keeps holding wakes back.
ACT_EXPIRY_SECONDS = 30.0


def generation(rt: Runtime, agent: AgentRecord) -> str:
    """The act generation as the wake script compares it (``""``: no act yet)."""
    return replies.text_or_none(rt.redis.get(AgentKeys(agent.agent_id).act_generation)) or ""


@contextmanager
def own_act(rt: Runtime, agent: AgentRecord) -> Iterator[None]:
    """Bracket an own act: its state change and its wake-fingerprint commit go inside."""
    token = uuid.uuid4().hex
    now = rt.clock.now()
    wake_scripts.begin_own_act(
        rt.scripts, agent.agent_id, token=token, expires_at=now + ACT_EXPIRY_SECONDS, now=now
    )
    try:
        yield
    finally:
        wake_scripts.end_own_act(rt.scripts, agent.agent_id, token=token)
