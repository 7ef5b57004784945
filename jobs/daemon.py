"""The daemon aggregate (channels.md C30-C34): per-run mini-files seen as one channel.

Foundation state: no mini-file support yet, so there is never a ``daemon``
channel and daemon events are refused with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs.runtime import Runtime
from store.models import AgentRecord


@dataclass(frozen=True)
class DaemonView:
    """What readers see of ``.notification/daemon/``."""

    payload: dict[str, Any] | None = None
    fp_entry: tuple[str, int, str] | None = None
    batch_state: dict[str, Any] = field(default_factory=lambda: {"count": 0, "alarm_fired": False})


def read_daemon(root: Path) -> DaemonView:
    return DaemonView()


def publish_daemon_event(
    rt: Runtime,
    agent: AgentRecord,
    daemon_id: object,
    event: object,
    *,
    priority: str | None = None,
    wait: bool = False,
) -> dict[str, Any]:
    return {"status": "error", "reason": "not_supported", "message": "daemon events come later"}
