"""Typed calls of the scheduler scripts: the per-host job store (delay.md D16) and the
leader lease (D18). Keys are hash-tagged per host (:mod:`tidings.store.keys`)."""

from __future__ import annotations

from typing import Literal

from tidings.store import keys
from tidings.store.scripts import Scripts, number


def put_job(
    scripts: Scripts,
    host: str,
    *,
    job_id: str,
    job_json: str,
    next_run: float | None,
    mode: Literal["add", "update"],
) -> bool:
    """D16: store a job with its next run time (``None`` = paused); false when ``add``
    met an existing id or ``update`` a missing one (nothing written)."""
    return (
        number(
            "scheduler_job_put",
            scripts(
                "scheduler_job_put",
                [keys.scheduler_jobs(host), keys.scheduler_run_times(host)],
                [job_id, job_json, "" if next_run is None else repr(next_run), mode],
            ),
        )
        == 1
    )


def remove_job(scripts: Scripts, host: str, *, job_id: str | bytes) -> bool:
    """D16: remove a job and its run time; true if it existed."""
    return (
        number(
            "scheduler_job_remove",
            scripts(
                "scheduler_job_remove",
                [keys.scheduler_jobs(host), keys.scheduler_run_times(host)],
                [job_id],
            ),
        )
        == 1
    )


def renew_lease(scripts: Scripts, host: str, *, value: str, expiry_ms: int) -> bool:
    """D18: extend the host's leader lease if ``value`` still holds it."""
    return (
        number(
            "scheduler_lease_renew",
            scripts(
                "scheduler_lease_renew",
                [keys.scheduler_leader(host)],
                [value, expiry_ms],
            ),
        )
        == 1
    )


def release_lease(scripts: Scripts, host: str, *, value: str) -> bool:
    """D18: give the host's leader lease up if ``value`` still holds it."""
    return (
        number(
            "scheduler_lease_release",
            scripts(
                "scheduler_lease_release",
                [keys.scheduler_leader(host)],
                [value],
            ),
        )
        == 1
    )


def take_over_lease(
    scripts: Scripts, host: str, *, gone_value: str, value: str, expiry_ms: int
) -> bool:
    """D18 with M52's rule: take the lease of a holder process known to be gone, only
    while the key still holds that holder's ``gone_value``."""
    return (
        number(
            "lock_takeover",
            scripts(
                "lock_takeover",
                [keys.scheduler_leader(host)],
                [gone_value, value, expiry_ms],
            ),
        )
        == 1
    )
