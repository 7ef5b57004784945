"""Queue names (architecture.md, Placement): every message for an agent goes to the
queue of the agent's host, which only that host's workers consume."""

from __future__ import annotations

#: Queue an actor is declared on; messages are always re-routed to a host queue.
UNROUTED_QUEUE = "tidings.unrouted"


def host_queue(host: str) -> str:
    return f"tidings.host.{host}"


def scheduler_queue(host: str) -> str:
    """Alarm requests: consumed only by the host's active scheduler (delay.md D15)."""
    return f"tidings.scheduler.{host}"
