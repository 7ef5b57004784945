"""``render_attention``: coherent read minus the delayed target → cap → spill (block-cap.md).

Interface placeholder on main: the cap branch implements it.
"""

from __future__ import annotations

from typing import Any

from jobs import delivery
from jobs.runtime import Runtime
from store.models import AgentRecord


def render_attention(rt: Runtime, agent: AgentRecord) -> dict[str, Any]:
    """The capped attention lane of one stable read, delivered version committed."""
    attention: dict[str, Any] = delivery.render(rt, agent).get("attention", {})
    return attention
