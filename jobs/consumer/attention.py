"""``render_attention``: coherent read minus the delayed target → cap → spill (block-cap.md).

The job behind the ``render_attention`` actor that ``prepare_turn`` runs beside
the memory observation; the same function runs inline.
"""

from __future__ import annotations

from tidings.jobs.cap import Lane
from tidings.jobs.consumer import delivery
from tidings.jobs.runtime import Runtime
from tidings.store.models import AgentRecord


def render_attention(rt: Runtime, agent: AgentRecord) -> Lane:
    """The capped attention lane of one stable read, its delivered version committed.

    ``{}`` when nothing is visible; an unstable read delivers and commits nothing
    (channels.md C22). The result is plain JSON: lanes come from JSON files.
    """
    return delivery.render(rt, agent).get("attention", {})
