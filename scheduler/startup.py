"""Start-up reconcile (delay.md D18): rebuild the host's alarm jobs from the state files.

For every agent registered on the host: a pending request gets its job (same
id, replaced if stored), an owed alarm gets ``expire_delay`` at once; then every
stored alarm job that is neither is removed. Reading one agent never stops the
others; if one failed, no stored job is removed (it might have been that agent's).
"""

from __future__ import annotations

from apscheduler.schedulers.base import BaseScheduler

from tidings.jobs import log
from tidings.jobs.consumer import alarm_plan
from tidings.jobs.runtime import Runtime
from tidings.scheduler import alarm_job
from tidings.store.registry import AgentRegistry
from tidings.store.registry_migration import migrate_legacy


def reconcile_host(
    rt: Runtime, scheduler: BaseScheduler, body: alarm_job.AlarmBody
) -> dict[str, int]:
    """D18 for ``rt.settings.host``; returns counts of ``added``, ``expired``, ``removed``."""
    keep: set[str] = set()
    counts = {"added": 0, "expired": 0, "removed": 0}
    failed = False
    migrate_legacy(rt.redis, rt.control)
    registry = AgentRegistry(rt.redis, rt.control)
    registry.add_host(rt.settings.host)
    for agent in registry.on_host(rt.settings.host, repair=True):
        try:
            plan = alarm_plan(rt, agent)
            if plan is None:
                continue
            keep.add(plan.request_id)
            if plan.action == "add":
                alarm_job.schedule(
                    scheduler, body, agent.agent_id, plan.request_id, plan.deadline_epoch
                )
                counts["added"] += 1
            else:
                rt.dispatch.expire_delay(agent, plan.request_id)
                counts["expired"] += 1
        except Exception as exc:
            log.event(
                "scheduler_startup_agent_failed", agent_id=agent.agent_id, error=type(exc).__name__
            )
            failed = True
    if failed:
        return counts
    for job in scheduler.get_jobs(jobstore=alarm_job.ALARM_STORE):
        if job.id not in keep and alarm_job.unschedule(scheduler, job.id):
            counts["removed"] += 1
    return counts
