"""tidings' own notices on the ``system`` channel (channels.md C29)."""

from __future__ import annotations

from tidings.jobs.channels.envelope import PublishResult
from tidings.jobs.channels.publishing import append_event
from tidings.jobs.runtime import Runtime
from tidings.store.models import AgentRecord


def notify(
    rt: Runtime,
    agent: AgentRecord,
    *,
    source: str,
    ref_id: str,
    body: str,
    idempotency_key: str | None = None,
    replace: bool = False,
) -> PublishResult:
    """Publish one system event tagged ``skip_if_ref_exists``: dropped at flush if a
    retained system event already has this ``ref_id``. Callers that must not repeat
    a notice for a day pass an ``idempotency_key`` too. With ``replace`` the event
    instead takes the place of a retained one with this ``ref_id`` (C50)."""
    event = {"source": source, "ref_id": ref_id, "body": body}
    return append_event(
        rt,
        agent,
        "system",
        event,
        idempotency_key=idempotency_key,
        skip_if_ref_exists=not replace,
        replace_ref=replace,
    )
