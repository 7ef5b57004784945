"""``tidings status``, run: tables for people, JSON for scripts (parser in status.py)."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from tidings.cli._common import emit, open_hub, wants_json
from tidings.inspection.agent_status import LiveDelay
from tidings.inspection.attention import MEANING
from tidings.inspection.status import Status


def show_status(args: argparse.Namespace) -> int:
    with open_hub(args) as hub:
        figures = hub.status()
    if wants_json(args):
        return emit(args, figures)
    print_tables(Console(), figures)
    return 0


def _delay_text(delay: LiveDelay | None, overdue: bool) -> str:
    if delay is None:
        return "[red]alarm overdue[/]" if overdue else "-"
    target = delay["target"] or "(target on its host)"
    return f"{target} until {delay['deadline_at']} ({delay['remaining_seconds']:.0f}s)"


def print_tables(console: Console, figures: Status) -> None:
    """The three tables of ``tidings status`` on a terminal."""
    queues = Table("queue", "waiting", "in flight", "delayed", "dead", title="Queues")
    for q in figures["queues"]:
        dead = f"[red]{q['dead']}[/]" if q["dead"] else "0"
        queues.add_row(
            str(q["name"]), str(q["depth"]), str(q["in_flight"]), str(q["delayed"]), dead
        )
    leaders = Table("host", "leader", "since", title="Schedulers")
    for host, leader in figures["schedulers"].items():
        leaders.add_row(host, str(leader["leader"] or "[red]none[/]"), str(leader["since"] or "-"))
    agents = Table("agent", "host", "pending", "processing", "live delay", title="Agents")
    for a in figures["agents"]:
        agents.add_row(
            a["agent_id"],
            a["host"],
            str(a["pending"]),
            str(a["processing"]),
            _delay_text(a["live_delay"], a["alarm_overdue"]),
        )
    tables = [queues, leaders, agents]
    if figures["needs_attention"]:
        attention = Table(
            "agent or queue", "host", "why", title="Needs attention", title_style="bold red"
        )
        for row in figures["needs_attention"]:
            why = [
                MEANING[word] + (f" ({row['count']})" if row["count"] else "")
                for word in row["attention"]
            ]
            attention.add_row(row["name"], row["host"] or "-", "\n".join(why))
        tables.insert(0, attention)
    for table in tables:
        console.print(table)
