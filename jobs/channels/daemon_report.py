"""The non-authoritative ``.notification/daemon.json`` report (channels.md C34).

Rewritten best effort after every daemon append or dismissal, and only when the
file is absent or already a report: a file someone else put there is left alone.
It is never a channel file (C7).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal, NotRequired, TypedDict, TypeGuard

from tidings.jobs import log
from tidings.jobs.channels.daemon_view import DaemonView
from tidings.store.files import atomic_write, safe_read
from tidings.store.jsonfmt import compact
from tidings.store.jsonread import loads_or

REPORT_FILE = ".notification/daemon.json"
REPORT_KIND: Final = "daemon_report"


class RunSummary(TypedDict):
    """One run of the report: its event count and, once it ended, its terminal status."""

    daemon_id: str
    event_count: int
    state: NotRequired[object]


class ReportStats(TypedDict):
    run_count: int
    event_count: int
    active_run_count: int
    terminal_run_count: int


class Report(TypedDict):
    """C34: the derived ``daemon.json`` report."""

    kind: Literal["daemon_report"]
    version: int
    derived: bool
    stats: ReportStats
    runs: list[RunSummary]


def _key(event: Mapping[str, object]) -> str:
    key = event.get("idempotency_key")
    return key if isinstance(key, str) else ""


def is_followup(event: Mapping[str, object]) -> bool:
    status = event.get("status")
    return (
        event.get("kind") == "daemon_followup"
        or _key(event).startswith("daemon-followup:")
        or (isinstance(status, str) and status.startswith("follow-up"))
    )


def is_terminal(event: object) -> TypeGuard[dict[str, object]]:
    """C34: a terminal event that is no follow-up."""
    if not isinstance(event, dict):
        return False
    terminal = event.get("kind") == "daemon_terminal" or _key(event).startswith("daemon-terminal:")
    return terminal and not is_followup(event)


def build(view: DaemonView) -> Report:
    runs: list[RunSummary] = []
    terminal_runs = 0
    for mini in view.logical:
        run: RunSummary = {"daemon_id": mini.daemon_id, "event_count": len(mini.logical)}
        terminals = [e for e in mini.logical if is_terminal(e)]
        if terminals:
            terminal_runs += 1
            run["state"] = terminals[-1].get("status")
        runs.append(run)
    return {
        "kind": REPORT_KIND,
        "version": 1,
        "derived": True,
        "stats": {
            "run_count": len(runs),
            "event_count": sum(r["event_count"] for r in runs),
            "active_run_count": len(runs) - terminal_runs,
            "terminal_run_count": terminal_runs,
        },
        "runs": runs,
    }


def _may_overwrite(root: Path) -> bool:
    outcome = safe_read(root, REPORT_FILE)
    if outcome.kind == "absent":
        return True
    if not outcome.ok:
        return False
    current = loads_or(outcome.data, None)
    return isinstance(current, dict) and current.get("kind") == REPORT_KIND


def refresh(root: Path, view: DaemonView) -> bool:
    """Rewrite the report from ``view``; ``False`` when left alone or on failure."""
    try:
        if view.error is not None or not _may_overwrite(root):
            return False
        atomic_write(root, REPORT_FILE, compact(build(view)).encode("utf-8"))
        return True
    except Exception as exc:  # best effort by contract (C34): never fail the mutation
        log.event("daemon_report_failed", workdir=str(root), error=type(exc).__name__)
        return False
