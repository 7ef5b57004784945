"""Consumer delay (delay.md). Foundation state: no delay is ever live."""

from __future__ import annotations

from jobs.allowlist import Allowlist
from jobs.runtime import Runtime
from store.models import AgentRecord


def reconcile(rt: Runtime, agent: AgentRecord, expected: str | None = None) -> bool:
    return False


def live_target(rt: Runtime, agent: AgentRecord, allow: Allowlist) -> str | None:
    return None


def expire(rt: Runtime, agent: AgentRecord, request_id: str) -> bool:
    return False
