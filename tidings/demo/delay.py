"""Demo chapter: a consumer delay ends in one high-priority alarm (delay.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from tidings.demo.tour import Tour, json_at

#: The demo's delay, in seconds.
DEMO_DELAY_SECONDS = 2


def _headers(snapshot: Mapping[str, object]) -> dict[str, object]:
    return {name: json_at(envelope, "header") for name, envelope in snapshot.items()}


def delay_alarm(tour: Tour) -> None:
    tour.chapter("A delay hides a channel until one alarm says what changed")
    agent = tour.agent
    tour.introduce("email", "a built-in channel that a mail bridge keeps up to date.")
    agent.publish("email", {"header": "1 unread mail", "data": {"count": 1}}, wait=True)
    tour.say(
        f"The agent mutes [bold]email[/] for {DEMO_DELAY_SECONDS} seconds. Only its own "
        "view changes: the state goes to .notification/.delay_state.json and the "
        "scheduler gets an alarm job keyed by the request id."
    )
    tour.does(
        cli=f"tidings delay email {DEMO_DELAY_SECONDS} --workdir W",
        python=f'agent.notification("delay", {{"channel": "email", "seconds": '
        f"{DEMO_DELAY_SECONDS}}})",
    )
    result = agent.notification("delay", {"channel": "email", "seconds": DEMO_DELAY_SECONDS})
    tour.expect(result["status"] == "ok", "the delay is accepted")
    tour.show(f"delay email {DEMO_DELAY_SECONDS}", result)
    agent.publish("email", {"header": "3 unread mail", "data": {"count": 3}}, wait=True)
    mirror = json.loads((tour.workdir / ".notification" / "email.json").read_text())
    tour.expect(mirror["header"] == "3 unread mail", "the producer keeps writing email.json")
    snapshot = agent.snapshot()
    tour.expect("email" not in snapshot, "email is hidden while the delay is live")
    tour.say("Meanwhile the mail bridge rewrites email.json, but the agent does not see it:")
    tour.show("agent.snapshot() during the delay", _headers(snapshot))

    alarm_path = tour.workdir / ".notification" / "delay-alarm.json"
    tour.wait_for(alarm_path.exists, "the delay alarm")
    alarm = json.loads(alarm_path.read_text())
    report = alarm["data"]["delay_alarm"]
    tour.expect(
        report["changed"] is True and report["request_id"] == result.get("request_id"),
        "the alarm reports that email changed",
    )
    tour.introduce(
        "delay-alarm",
        "tidings' own: one high-priority notification when a delay "
        "ends, saying whether the channel changed meanwhile.",
    )
    tour.say(
        "At the deadline the scheduler fires the job and publishes exactly one alarm, "
        "and email is visible again:"
    )
    tour.show(
        ".notification/delay-alarm.json",
        {
            "header": alarm["header"],
            "priority": alarm["priority"],
            "changed": report["changed"],
            "actual_seconds": report["actual_seconds"],
            "count at start": report["initial"].get("producer_reported_count"),
            "count now": report["current"].get("producer_reported_count"),
        },
    )
    snapshot = agent.snapshot()
    tour.expect({"email", "delay-alarm"} <= set(snapshot), "email is back, with the alarm")
    tour.show("agent.snapshot() after the delay", _headers(snapshot))
