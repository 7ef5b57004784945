"""C11's producer entry: ``daemon`` events go to the daemon aggregate, others to a channel.

The routing sits here, above both :mod:`tidings.jobs.channels.publishing` and
:mod:`tidings.jobs.channels.daemon_runs`, so neither imports the other.
"""

from __future__ import annotations

from tidings.jobs.channels import publishing, reserved
from tidings.jobs.channels.envelope import PublishResult, failure
from tidings.jobs.channels.names import DAEMON
from tidings.jobs.runtime import Runtime
from tidings.store.models import AgentRecord


def publish_event(
    rt: Runtime,
    agent: AgentRecord,
    channel: str,
    event: object,
    *,
    priority: str | None = None,
    idempotency_key: str | None = None,
    wait: bool = False,
) -> PublishResult:
    """C11: append ``event`` to ``channel``; a ``daemon`` event goes to its run's mini-file.
    An event in ``system`` shaped like tidings' own notices is refused (C54)."""
    if channel != DAEMON:
        problem = reserved.producer_event_problem(channel, event)
        if problem is not None:
            return problem
        return publishing.append_event(
            rt,
            agent,
            channel,
            event,
            priority=priority,
            idempotency_key=idempotency_key,
            wait=wait,
        )
    problem = publishing.check_channel(rt, agent, channel)
    if problem is not None:
        return problem
    if not isinstance(event, dict):
        return failure("invalid_event", "event must be a JSON object")
    daemon_id = event.get("daemon_id")
    if daemon_id is None:
        return failure("missing_daemon_id", "a daemon event needs a daemon_id")
    # Loaded here: a hook publishing to any other channel never pays for the daemon views.
    from tidings.jobs.channels import daemon_runs  # noqa: PLC0415

    return daemon_runs.publish_daemon_event(
        rt, agent, daemon_id, event, priority=priority, wait=wait
    )
