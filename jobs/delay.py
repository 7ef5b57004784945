"""Consumer delay and delay-expiry alarms (delay.md).

Interface placeholder on main: the delay branch implements these functions with
exactly these signatures. Until then no delay is ever live and requests are
refused with a reason.
"""

from __future__ import annotations

from typing import Any

from jobs.allowlist import Allowlist
from jobs.runtime import Runtime
from store.models import AgentRecord


def reconcile(rt: Runtime, agent: AgentRecord, expected: str | None = None) -> bool:
    """D9-D11: publish an overdue delay's alarm; ``True`` if this call published it."""
    return False


def live_target(rt: Runtime, agent: AgentRecord, allow: Allowlist) -> str | None:
    """D1, D8: the target of the agent's live delay, or ``None``."""
    return None


def expire(rt: Runtime, agent: AgentRecord, request_id: str) -> bool:
    """D17: the ``expire_delay`` job; runs D14 when it published the alarm."""
    return False


def request_delay(
    rt: Runtime, agent: AgentRecord, channel: object, seconds: object
) -> dict[str, Any]:
    """D3, D4, D15: the ``delay`` tool action."""
    return {"status": "error", "reason": "delay_unavailable", "message": "delay is not built yet"}
