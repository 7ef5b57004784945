"""The ``settings`` SHOW action (channels.md C42): two rows, read live, no side effects."""

from __future__ import annotations

from typing import Literal, TypedDict

from tidings.jobs import limits
from tidings.store.models import AgentRecord


class SettingRow(TypedDict):
    """C42: one setting, its live value and its default."""

    key: str
    current: int
    default: int
    configurable: bool
    comment: str


class Shown(TypedDict):
    settings: list[SettingRow]


class Unavailable(TypedDict):
    status: Literal["failed"]
    error_code: Literal["SETTINGS_UNAVAILABLE"]
    reason: Literal["settings_unavailable"]
    message: str


#: C42: the exact failure answer; never partial rows.
UNAVAILABLE: Unavailable = {
    "status": "failed",
    "error_code": "SETTINGS_UNAVAILABLE",
    "reason": "settings_unavailable",
    "message": "settings inventory is unavailable",
}


def show(agent: AgentRecord) -> Shown | Unavailable:
    """C42: ``{"settings": [max_chars row, delay cap row]}``; writes, creates and logs nothing."""
    try:
        max_chars = limits.max_chars(agent.root, log_invalid=False)
        delay_cap = limits.delay_cap(log_invalid=False)
    except Exception:  # any failure is the one documented answer
        return UNAVAILABLE.copy()
    return {
        "settings": [
            {
                "key": "notification.max_chars",
                "current": max_chars,
                "default": limits.DEFAULT_MAX_CHARS,
                "configurable": True,
                "comment": "notification-manual#block-size-cap-persistent-and-attention-lanes",
            },
            {
                "key": "notification.delay_max_seconds",
                "current": delay_cap,
                "default": limits.DEFAULT_DELAY_CAP,
                "configurable": True,
                "comment": "notification-manual#consumer-delay-and-expiry-alarm",
            },
        ]
    }
