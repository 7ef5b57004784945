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
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord

#: How long (s) an act that died mid-way keeps holding wakes back.
ACT_EXPIRY_SECONDS = 30.0


def generation(rt: Runtime, agent: AgentRecord) -> str:
    """The act generation as the wake script compares it (``""``: no act yet)."""
    raw = rt.redis.get(AgentKeys(agent.agent_id).act_generation)
    if raw is None:
        return ""
    return raw.decode("ascii") if isinstance(raw, bytes) else str(raw)


@contextmanager
def own_act(rt: Runtime, agent: AgentRecord) -> Iterator[None]:
    """Bracket an own act: its state change and its wake-fingerprint commit go inside."""
    k = AgentKeys(agent.agent_id)
    token = uuid.uuid4().hex
    now = rt.clock.now()
    rt.scripts("own_act_begin", [k.act_generation, k.acts_in_flight],
               [token, now + ACT_EXPIRY_SECONDS, now])
    try:
        yield
    finally:
        rt.scripts("own_act_end", [k.act_generation, k.acts_in_flight], [token])
