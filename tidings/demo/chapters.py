"""The narrated tour (``tidings demo``), on the in-memory store in a temp workdir (one
chapter runs ``tidings up`` on the default store, in a temporary state directory).

Each chapter is a function ``(tour) -> None``; they run in order and every one
checks what it shows, so a broken capability fails the demo (exit 1).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.panel import Panel

from tidings._hub import connect
from tidings.demo import channels
from tidings.demo.cap import oversized_lane
from tidings.demo.delay import delay_alarm
from tidings.demo.memory import memory_inbox
from tidings.demo.restart import host_restart
from tidings.demo.status import status
from tidings.demo.tour import Tour, json_at
from tidings.demo.web import web_console


def burst(tour: Tour) -> None:
    tour.chapter("A burst of events lands in one channel file")
    tour.introduce(
        "mcp.build",
        "a CI watcher's build results (any name that starts with "
        "[bold]mcp.[/] is a channel, one per MCP watcher).",
    )
    tour.say("It fires 200 events at it as fast as it can, each one call:")
    tour.does(
        cli="""tidings publish mcp.build --event '{"text": "step 0 passed", "step": 0}' """
        "--workdir W",
        python='agent.publish_event("mcp.build", {"text": "step 0 passed", "step": 0})',
    )
    tour.say(
        "Each call pushes a record onto a Redis buffer; one flush drains many records "
        "into a single atomic file write."
    )
    started = time.perf_counter()
    for n in range(200):
        tour.agent.publish_event("mcp.build", {"text": f"step {n} passed", "step": n})
    mirror = tour.workdir / ".notification" / "mcp.build.json"

    def landed() -> bool:
        try:
            return bool(json.loads(mirror.read_text())["data"]["events"][-1]["step"] == 199)
        except (OSError, ValueError, KeyError):
            return False

    tour.wait_for(landed, "the burst to reach mcp.build.json")
    envelope = json.loads(mirror.read_text())
    events = envelope["data"]["events"]
    tour.expect(
        [e["step"] for e in events] == list(range(180, 200)), "the newest 20 events, in order"
    )
    tour.say(
        f"All 200 records were applied in {time.perf_counter() - started:.2f}s; the mirror "
        f"keeps the newest {len(events)} (the default retention), oldest first."
    )
    tour.show(
        ".notification/mcp.build.json (header and the last event)",
        {"header": envelope["header"], "priority": envelope["priority"], "last event": events[-1]},
    )
    tour.say(
        "The agent reads a coherent snapshot of every visible channel (its tool's "
        "[bold]check[/], stamped, shows the same):"
    )
    tour.does(cli="tidings check --workdir W", python="agent.snapshot()")
    headers = {k: json_at(v, "header") for k, v in tour.agent.snapshot().items()}
    tour.show("agent.snapshot()", headers)


def bad_input(tour: Tour) -> None:
    tour.chapter("Bad input answers with a reason and changes nothing")
    tour.does(
        cli="""tidings publish foo --event '{"text": "nope"}' --workdir W   # exit 1""",
        python='agent.publish_event("foo", {"text": "nope"})',
    )
    for channel in ("../x", "foo"):
        result = tour.agent.publish_event(channel, {"text": "nope"})
        tour.expect(result["status"] == "error", f"{channel} refused")
        tour.show(f"publish_event({channel!r}, ...)", result)


#: The chapters, in order; later capabilities add theirs before ``status`` and the web
#: console, which end the tour (issues 7 and 16).
CHAPTERS: list[Callable[[Tour], None]] = [
    burst,
    bad_input,
    *channels.CHAPTERS,
    delay_alarm,
    memory_inbox,
    host_restart,
    oversized_lane,
    status,
    web_console,
]


def run() -> int:
    console = Console()
    console.print(
        Panel.fit(
            "[bold]tidings[/] — a tour on the in-memory store (not durable); "
            "one chapter runs `tidings up` on the default store (durable)",
            border_style="cyan",
        )
    )
    console.print(
        "Each chapter shows the command line ([dim]$[/]) and the Python call "
        "([dim]>>>[/]) that do what it narrates: W is the agent's workdir, "
        "[bold]agent[/] is [bold]hub.agent(W)[/] on [bold]hub = tidings.connect()[/]."
    )
    with (
        tempfile.TemporaryDirectory(prefix="tidings-demo-") as tmp,
        connect("embedded", background=True) as hub,
    ):
        workdir = Path(tmp)
        tour = Tour(
            hub,
            hub.agent(workdir),
            workdir,
            console,
            interactive=sys.stdin.isatty() and console.is_terminal,
        )
        try:
            for chapter in CHAPTERS:
                chapter(tour)
            unexplained = set(tour.agent.snapshot()) - tour.introduced
            tour.expect(not unexplained, f"the tour said what {sorted(unexplained)} are")
        except AssertionError as exc:
            console.print(f"[bold red]demo failed:[/] {exc}")
            return 1
    console.print("[bold green]Tour complete.[/]")
    return 0
