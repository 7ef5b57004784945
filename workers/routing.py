"""Queue names (guide.md, Placement): every message for an agent goes to the
queue of the agent's host, which only that host's workers consume."""

from __future__ import annotations

#: Every tidings queue name starts with this (``tidings status`` finds queues by it).
QUEUE_PREFIX = "tidings."
#: Queue an actor is declared on; messages are always re-routed to a host queue.
UNROUTED_QUEUE = f"{QUEUE_PREFIX}unrouted"


def host_queue(host: str) -> str:
    return f"{QUEUE_PREFIX}host.{host}"


def scheduler_queue(host: str) -> str:
    """Alarm requests: consumed only by the host's active scheduler (delay.md D15)."""
    return f"{QUEUE_PREFIX}scheduler.{host}"
