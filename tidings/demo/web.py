"""Demo chapter, the last: the web console over what the tour left behind (issue 16)."""

from __future__ import annotations

import time
import urllib.request

from tidings.demo.tour import Tour

#: How long the chapter waits for the console to answer (seconds).
READY_SECONDS = 10.0


def _get(url: str) -> str:
    deadline = time.monotonic() + READY_SECONDS
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return str(answer.read().decode("utf-8"))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def web_console(tour: Tour) -> None:
    tour.chapter("Operations: the web console")
    try:
        from tidings.web.serve import Background  # noqa: PLC0415 - the optional extra
    except ImportError:
        tour.say(
            "The live console needs its extra: [bold]pip install 'tidings[web]'[/], then "
            "[bold]tidings web[/]."
        )
        return
    tour.say(
        "Next to a running [bold]tidings up[/], the console shows the overview, the "
        "agents, each agent's channels, attention lane, delays, inbox and wakes, updated "
        "live (read-only; [bold]--allow-actions[/] to ignore inbox items and re-enqueue "
        "dead letters). It prints its address when it starts:"
    )
    tour.does(cli="tidings web")
    with Background(tour.hub) as console:
        page = _get(f"{console.url}agents/{tour.agent.agent_id}")
        tour.expect(
            tour.agent.agent_id in page and "Attention lane" in page, "the console shows the agent"
        )
        if tour.interactive:
            tour.say(
                f"This tour's console is at [bold]{console.url}[/] until you press Enter "
                "(then the tour's store is gone)."
            )
            tour.pause()
        else:
            tour.say("The tour served it over its own store and read this agent's page.")
