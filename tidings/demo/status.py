"""Demo chapter, the last: ``tidings status`` on what the tour left behind (issue 7)."""

from __future__ import annotations

from tidings.cli.status_view import print_tables
from tidings.demo.tour import Tour
from tidings.workers.routing import host_queue


def status(tour: Tour) -> None:
    tour.chapter("Operations: tidings status")
    tour.say(
        "An operator asks the store how things stand. The agent delays "
        "[bold]mcp.build[/] once more and an application event waits in its inbox:"
    )
    tour.does(
        cli="tidings delay mcp.build 300 --workdir W",
        python='agent.admit("app.ticket", "ticket #42 was reopened")',
    )
    delayed = tour.agent.notification("delay", {"channel": "mcp.build", "seconds": 300})
    tour.expect(delayed["status"] == "ok", "the delay is accepted")
    admitted = tour.agent.admit("app.ticket", "ticket #42 was reopened")
    tour.expect(admitted["status"] == "ok", "the event is admitted")

    host = tour.hub.settings.host
    tour.wait_for(
        lambda: tour.hub.status()["schedulers"][host]["leader"] is not None, "the scheduler to lead"
    )
    figures = tour.hub.status()
    tour.does(cli="tidings status", python="hub.status()")
    print_tables(tour.console, figures)
    tour.expect(
        any(q["name"] == host_queue(host) for q in figures["queues"]), "the host queue is listed"
    )
    [agent] = [a for a in figures["agents"] if a["agent_id"] == tour.agent.agent_id]
    tour.expect(agent["pending"] == 1, "one pending inbox item")
    live = agent["live_delay"]
    tour.expect(live is not None and live["target"] == "mcp.build", "the live delay")
    tour.say(
        "The same figures as JSON for scripts: [bold]tidings status --json[/]; "
        "Prometheus metrics with [bold]TIDINGS_METRICS_PORT[/]; deploy/README.md "
        "covers one host, many hosts and Sentinel."
    )
    cancelled = tour.agent.notification("delay", {"channel": "mcp.build", "seconds": 0})
    tour.expect(cancelled["status"] == "ok", "the delay is cancelled")
