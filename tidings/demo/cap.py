"""Demo chapter: an oversized lane is compacted to the block cap and spilled whole."""

from __future__ import annotations

import json
from pathlib import Path

from tidings.demo.tour import Tour
from tidings.jobs.cap import measure
from tidings.jobs.limits import max_chars

#: The oversized channel: 25 messages of 3,000 characters each.
MESSAGES, CHARS = 25, 3000


def _in_workdir(tour: Tour, text: object) -> str:
    """``text`` with the tour's temporary workdir written as W (gone when the tour ends)."""
    return str(text).replace(str(tour.workdir), "W")


def oversized_lane(tour: Tour) -> None:
    tour.chapter("An oversized lane is compacted to the cap and spilled whole")
    cap = max_chars(tour.workdir, log_invalid=False)
    tour.introduce("mcp.telegram", "a Telegram bridge's chat messages.")
    tour.say(
        f"The bridge mirrors {MESSAGES} messages of {CHARS:,} characters into it; the "
        f"block cap is {cap:,} characters."
    )
    envelope = {
        "header": f"Telegram: {MESSAGES} new messages",
        "data": {
            "message_ids": [f"tg-{n}" for n in range(MESSAGES)],
            "messages": [
                {"id": f"tg-{n}", "from": "ann", "text": f"{n}: " + "lorem " * 500}
                for n in range(MESSAGES)
            ],
        },
    }
    tour.does(
        cli="tidings publish mcp.telegram --envelope @telegram.json --wait --workdir W",
        python='agent.publish("mcp.telegram", envelope, wait=True)',
    )
    result = tour.agent.publish("mcp.telegram", envelope, wait=True)
    tour.expect(result["status"] == "ok", "the mirror was written")
    attention = tour.agent.render().get("attention")
    if not isinstance(attention, dict):
        raise AssertionError("the lane is delivered")
    overflow, telegram = attention["overflow"], attention["mcp.telegram"]
    if not isinstance(overflow, dict) or not isinstance(telegram, dict):
        raise AssertionError("the lane carries its marker and the channel")
    tour.expect(measure(attention) <= cap, "the delivered lane fits the cap")
    spill = Path(overflow["path"])
    tour.expect(
        json.loads(spill.read_text())["mcp.telegram"]["data"] == envelope["data"],
        "the spill file holds the full original",
    )
    first = telegram["data"]["messages"][0]
    tour.say(
        f"The lane measured {overflow['full_chars']:,} characters; what reaches the model "
        f"measures {measure(attention):,}. Each text keeps its first 200 characters, ids "
        "and counts stay, and the lane says where the rest went (W is the workdir):"
    )
    tour.does(cli="tidings check --workdir W", python='agent.render()["attention"]')
    tour.show(
        "the lane the model gets: its first message, the marker and the comment",
        {
            "first message": first,
            "overflow": {**overflow, "path": _in_workdir(tour, overflow["path"])},
            "comment": _in_workdir(tour, attention["comment"]),
        },
    )
    again = tour.agent.render()
    tour.expect(again.get("attention") == attention, "rendering again gives the same lane")
    logs = sorted(p.name for p in (tour.workdir / "logs").iterdir())
    tour.expect(logs == [spill.name], "one spill file, reused")
    tour.say(
        f"Rendering again reuses the content-addressed spill: logs/ holds {logs} "
        f"({spill.stat().st_size:,} bytes)."
    )
