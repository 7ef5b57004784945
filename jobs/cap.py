"""Block cap (block-cap.md). Foundation state: lanes pass through unchanged."""

from __future__ import annotations

from typing import Any

from jobs.runtime import Runtime
from store.models import AgentRecord


def sanitise_attention(
    attention: dict[str, Any], persistent: dict[str, Any] | None
) -> dict[str, Any]:
    return attention


def cap_attention(rt: Runtime, agent: AgentRecord, lane: dict[str, Any]) -> dict[str, Any]:
    return lane


def cap_persistent(rt: Runtime, agent: AgentRecord, block: dict[str, Any]) -> dict[str, Any]:
    return block
