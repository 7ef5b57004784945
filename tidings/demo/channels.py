"""Demo chapters for the channel model: hooks, a blocked channel, dismissal, wake.

The embedded hub runs the scheduler in-process, so its sync tick (every second)
notices direct writes, warns about blocked channels and wakes the agent, exactly
as in production.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from tidings.demo.tour import Tour, json_at

HOOK = {
    "name": "deploy-watcher",
    "channel": "deploys",
    "source": "a cron job tailing the deploy log",
    "description": "one event per production deploy",
    "how_to_modify": "edit /etc/cron.d/deploy-watcher",
    "how_to_cancel": "remove /etc/cron.d/deploy-watcher",
    "max_events": 5,
}


#: Long enough for at least one sync tick at the default 1 s interval.
QUIET_SECONDS = 1.5


def _drain_wakes(tour: Tour) -> None:
    """Consume wake signals until a whole tick passes without one."""
    while tour.agent.wait_for_wake(QUIET_SECONDS) is not None:
        pass


def _write_directly(tour: Tour, name: str, payload: Mapping[str, object]) -> None:
    """What an outside producer does: temp file + rename, no tidings call."""
    directory = tour.workdir / ".notification"
    directory.mkdir(exist_ok=True)
    temp = directory / f".{name}.demo.tmp"
    temp.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(temp, directory / name)


def _system_events(tour: Tour) -> list[dict[str, object]]:
    events = json_at(tour.agent.snapshot(), "system", "data", "events")
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def _system_refs(tour: Tour) -> list[object]:
    return [e.get("ref_id") for e in _system_events(tour)]


def hooks(tour: Tour) -> None:
    tour.chapter("Hook channels are registered per agent")
    tour.say(
        "A channel of your own needs a hook: a manifest that says who writes it and how "
        "to stop them. Until then it is refused:"
    )
    refused = tour.agent.publish_event("deploys", {"text": "v1.4 is live"})
    tour.expect(refused.get("reason") == "invalid_channel", "an unregistered channel is refused")
    tour.show("publish_event('deploys', ...) before registration", refused)
    tour.does(
        cli="tidings hooks add --input @deploy-watcher.json --workdir W",
        python='agent.notification("add", manifest)',
    )
    added = tour.agent.notification("add", HOOK)
    tour.expect(added == {"status": "ok", "reason": "added", "name": "deploy-watcher"}, "added")
    tour.show("notification(action='add', input=<manifest>)", added)
    tour.introduce(
        "deploys", "this hook's, one event per production deploy, written by a cron job."
    )
    tour.agent.publish_event("deploys", {"text": "v1.4 is live"}, wait=True)
    tour.expect("deploys" in tour.agent.snapshot(), "the hook channel is delivered")
    tour.say("The channel now passes, for this agent only; [bold]list[/] shows the registry:")
    tour.does(cli="tidings hooks list --workdir W", python='agent.notification("list")')
    tour.show("notification(action='list')", tour.agent.notification("list"))


def blocked(tour: Tour) -> None:
    tour.chapter("A channel nobody registered is blocked, and said so once")
    tour.say(
        "A stray process writes [bold].notification/scraper.json[/] directly, as any "
        "producer may (a temp file, then a rename):"
    )
    tour.does(
        cli="""echo '{"header": "scraped"}' > W/.notification/.scraper.tmp && """
        "mv W/.notification/.scraper.tmp W/.notification/scraper.json"
    )
    tour.introduce("system", "tidings' own notices to the agent, such as this warning.")
    _write_directly(tour, "scraper.json", {"header": "scraped", "data": {"n": 1}})
    tour.wait_for(lambda: "blocked_channel:scraper" in _system_refs(tour), "the warning")
    _drain_wakes(tour)  # the warning is a new system event: it wakes once, then ticks are quiet
    tour.expect(_system_refs(tour).count("blocked_channel:scraper") == 1, "warned once only")
    tour.expect("scraper" not in tour.agent.snapshot(), "the blocked file is never delivered")
    warning = next(e for e in _system_events(tour) if e.get("ref_id") == "blocked_channel:scraper")
    tour.show("the system event (warned once; who was warned is kept in Redis)", warning)


def dismissal(tour: Tour) -> None:
    tour.chapter("Dismissal clears what the agent has seen, and nothing newer")
    tour.say("The agent, having read the warning, dismisses it by its reference:")
    tour.does(
        cli="""tidings notification dismiss_ref --input '{"ref_id": """
        """"blocked_channel:scraper"}' --workdir W""",
        python='agent.notification("dismiss_ref", {"ref_id": "blocked_channel:scraper"})',
    )
    tour.agent.stamp({"status": "ok"})  # the agent is shown the current channels
    gone = tour.agent.notification("dismiss_ref", {"ref_id": "blocked_channel:scraper"})
    tour.expect(gone.get("removed") == 1, "the warning was removed")
    tour.show("dismiss_ref {'ref_id': 'blocked_channel:scraper'}", gone)
    tour.introduce(
        "soul",
        "a built-in channel for prompts that ask the agent to reflect; "
        "its producer rewrites the whole envelope each time, with [bold]publish[/].",
    )
    tour.does(
        cli="""tidings publish soul --envelope '{"header": "reflect", "data": """
        """{"prompt": "v1"}}' --wait --workdir W""",
        python='agent.publish("soul", {"header": "reflect", "data": {"prompt": "v1"}}, wait=True)',
    )
    tour.agent.publish("soul", {"header": "reflect", "data": {"prompt": "v1"}}, wait=True)
    tour.agent.stamp({"status": "ok"})  # the agent is shown v1
    # A wake would show the agent v2 at once (a prompt visit); put off for a minute (a
    # delay, chapter 7), soul is not shown again until the agent reads it.
    tour.say(
        "The agent has seen it, and puts [bold]soul[/] off for a minute; meanwhile the "
        "producer rewrites it, so what the agent saw is no longer what is there:"
    )
    tour.does(
        cli="tidings delay soul 60 --workdir W",
        python='agent.notification("delay", {"channel": "soul", "seconds": 60})',
    )
    put_off = tour.agent.notification("delay", {"channel": "soul", "seconds": 60})
    tour.expect(put_off["status"] == "ok", "soul is put off")
    tour.agent.publish("soul", {"header": "reflect", "data": {"prompt": "v2"}}, wait=True)
    stale = tour.agent.notification("dismiss_channel", {"channel": "soul"})
    tour.expect(stale.get("reason") == "stale_channel_version", "a stale dismissal is refused")
    tour.show("dismiss_channel {'channel': 'soul'}", stale)
    tour.say("The agent reads it again, or insists:")
    tour.does(
        cli="""tidings notification dismiss_channel --input '{"channel": "soul", """
        """"force": true}' --workdir W""",
        python='agent.notification("dismiss_channel", {"channel": "soul", "force": True})',
    )
    forced = tour.agent.notification("dismiss_channel", {"channel": "soul", "force": True})
    tour.expect(forced.get("cleared") is True, "force clears it")
    tour.show("dismiss_channel {'channel': 'soul', 'force': true}", forced)
    tour.does(cli="tidings delay soul 0 --workdir W   # 0 cancels the delay")
    cancelled = tour.agent.notification("delay", {"channel": "soul", "seconds": 0})
    tour.expect(cancelled["status"] == "ok", "the delay is cancelled")


def wake(tour: Tour) -> None:
    tour.chapter("A direct write wakes the agent")
    tour.agent.stamp({"status": "ok"})
    _drain_wakes(tour)  # start from a quiet stream
    tour.introduce("mcp.watch", "an issue tracker's MCP watcher, which writes its file itself.")
    tour.say(
        "It writes [bold].notification/mcp.watch.json[/]; tidings notices the new "
        "fingerprint (a filesystem watcher starts a visit of this agent at once; the sync "
        "tick, every second, is the backstop) and appends a wake signal, which the "
        "orchestrator, waiting, gets:"
    )
    tour.does(python="agent.wait_for_wake(5)      # asyncio: await agent.wait_for_wake(5)")
    _write_directly(tour, "mcp.watch.json", {"header": "1 new issue", "data": {"id": 42}})
    signal = tour.agent.wait_for_wake(5)
    if signal is None:
        raise AssertionError("wait_for_wake returned the signal")
    attention = json_at(signal, "result", "_meta", "agent_meta", "notifications", "attention")
    if not isinstance(attention, dict):  # the lane: channel -> payload
        raise AssertionError("the wake signal carries the stamped attention lane")
    tour.expect("mcp.watch" in attention, "the stamped check carries the new channel")
    tour.show(
        "agent.wait_for_wake(5)",
        {
            "kind": signal["kind"],
            "wake_id": signal["wake_id"],
            "call": signal["call"],
            "channels in the stamped result": sorted(attention),
        },
    )
    tour.expect(tour.agent.wait_for_wake(QUIET_SECONDS) is None, "nothing new: no second wake")
    tour.say("The agent's own dismissals and already-delivered state never wake it.")


CHAPTERS = [hooks, blocked, dismissal, wake]
