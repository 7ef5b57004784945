"""Every public path keeps every rule (issue 21): one table of rule scenarios, each run on
every path that exposes what it needs, as APScheduler 4 runs its tests over every backend.

How to read and extend it:

- ``SCENARIOS`` is the table: a scenario is written once, against the small interface of
  :class:`tests.contract.paths.Path`, and names the capabilities it needs.
- ``tests/contract/paths.py`` ``PATHS`` lists the public paths (sync inline, sync with a
  worker, ``tidings.aio``, the CLI, the MCP tools and resource, the console preview);
  a path added there gets every scenario it exposes, with no edit here.
- ``store`` (conftest) runs the whole table on fakeredis, on a real redis-server and on
  a Redis Cluster, and on the redis-server again with prompt visits racing the scenario
  (``real-racing``: a racing :class:`tests.contract.world.World`, issue 33); another
  store kind is one more parameter there.
- Where the console's read-only preview must differ (it reports an overdue alarm
  instead of publishing it, names a spill instead of writing it, commits nothing) the
  scenario asserts exactly that difference (``path.publishes`` / ``path.commits``).

Time is a :class:`tests.contract.world.StepClock`: deadlines pass by ``advance``,
workers and waits run in real time.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any

import pytest

from tests.contract.paths import (
    ACT,
    LANE,
    MEMORY,
    PATHS,
    READ,
    STAMP,
    Path,
    attention_of,
    channels_of,
)
from tests.contract.world import World, unreadable
from tidings.jobs.consumer import committed
from tidings.jobs.consumer.delivery import GUIDANCE_REF, STAMP_INSTRUCTION
from tidings.jobs.limits import DEFAULT_MAX_CHARS

SOUL = {"header": "s", "data": {"count": 7, "events": [1]}}
ALARM_HEADER = "Notification delay ended: soul"
DELAY_SECONDS = 5
SPILL_NAME = re.compile(r"notification-attention-overflow-([0-9a-f]{8})\.json")


def delay(path: Path, channel: str, seconds: int) -> dict[str, Any]:
    result = path.act("delay", {"channel": channel, "seconds": seconds})
    assert result["status"] == "ok", result
    return result


def delay_soul(path: Path, world: World, seconds: int = DELAY_SECONDS) -> None:
    """The agent delays ``soul`` through the path, or — on a path with no tool — the
    orchestrator does."""
    if ACT in path.exposes:
        delay(path, "soul", seconds)
    else:
        assert (
            world.producer.notification("delay", {"channel": "soul", "seconds": seconds})["status"]
            == "ok"
        )


# -- the scenarios -------------------------------------------------------------------------


def d9_overdue_alarm_shows_in_the_same_read_once(path: Path, world: World) -> None:
    """delay.md D9, channels.md C22: the first read after the deadline shows the due
    target and its alarm together; a second read publishes nothing again. The console
    shows the target with the alarm *overdue* and publishes nothing.

    In a racing world every prompt visit reconciles too (D9, C27): one that the delay's
    write started and that runs only after the deadline publishes the alarm itself, as
    the scheduler may. Elsewhere it races the first read, which shows the alarm whoever
    published it; on the console, whose claim is that *it* publishes nothing, the world
    settles before the deadline passes."""
    path.publish("soul", SOUL)
    delay_soul(path, world)
    assert "soul" not in path.read()
    if not path.publishes:
        world.settle()
    world.clock.advance(DELAY_SECONDS + 1)
    first = path.read()
    if not path.publishes:
        assert "soul" in first and "delay-alarm" not in first
        assert world.file(".notification/delay-alarm.json") is None
        assert world.delay_status() == "active"
        assert path.page()["alarm_overdue"] is True  # type: ignore[attr-defined]
        return
    assert {"soul", "delay-alarm"} <= set(first)
    assert first["delay-alarm"]["header"] == ALARM_HEADER
    assert world.delay_status() == "published"
    alarm = world.file(".notification/delay-alarm.json")
    second = path.read()
    assert {"soul", "delay-alarm"} <= set(second)
    assert world.file(".notification/delay-alarm.json") == alarm


def c22_delayed_target_is_omitted_while_active(path: Path, world: World) -> None:
    """channels.md C22 (delay.md D5): the live delay's target is left out of every read
    until its deadline; other channels stay; a cancel shows it again, with no alarm."""
    path.publish("soul", SOUL)
    path.publish_event("system", {"body": "hello"})
    delay_soul(path, world, 60)
    for _ in range(2):
        shown = path.read()
        assert "soul" not in shown and "system" in shown
        world.clock.advance(20)
    if ACT in path.exposes:
        assert delay(path, "soul", 0)["action"] == "cancelled"
        shown = path.read()
        assert "soul" in shown and "delay-alarm" not in shown


def c23_a_read_that_delivers_is_not_news(path: Path, world: World) -> None:
    """channels.md C23: a delivery commits what it handed over, so the next tick does not
    wake the agent for it. ``snapshot()`` and the console preview commit nothing: the
    tick still wakes.

    The wakes are counted from before the publish: in a racing world a prompt visit
    (C27) may wake the agent for the publish before the read. So a read that commits
    nothing leaves exactly one wake for the publish, the visit's or the tick's, never
    two; a delivery leaves none after it, and before it at most the one a prompt visit
    committed while the publish was not yet delivered (a correct wake; none without
    prompt visits)."""
    before = world.wakes()
    path.publish("soul", SOUL)
    assert "soul" in path.read()
    delivered = world.wakes()
    world.tick()
    if path.commits:
        assert world.wakes() == delivered
        assert delivered - before <= (1 if world.racing else 0)
    else:
        assert world.wakes() == before + 1


def c53_own_acts_never_wake_a_producer_does(path: Path, world: World) -> None:
    """channels.md C23, C53: the agent's own dismissal, delay and cancel never wake it; a
    producer's change to another channel does, within one tick."""
    path.publish("soul", SOUL)
    path.publish_event("mcp.build", {"text": "tests passed"})
    assert {"soul", "mcp.build"} <= set(path.read())
    world.tick()
    settled = world.wakes()
    dismissed = path.act("dismiss_channel", {"channel": "mcp.build", "force": not path.commits})
    assert dismissed["status"] == "ok" and dismissed["cleared"] is True, dismissed
    world.tick()
    assert world.wakes() == settled
    delay(path, "soul", 60)
    world.tick()
    assert world.wakes() == settled
    delay(path, "soul", 0)
    world.tick()
    assert world.wakes() == settled
    path.publish_event("system", {"body": "a producer's news"})
    world.tick()
    assert world.wakes() == settled + 1


def c24_the_stamp_carries_the_live_payload(path: Path, world: World) -> None:
    """channels.md C24: the lane holds each channel's payload as it is now, without its
    ``notification_guidance``; the stamp's guidance lists the lane's channels."""
    path.publish("soul", {**SOUL, "notification_guidance": "internal"})
    live = {k: v for k, v in world.channel("soul").items() if k != "notification_guidance"}
    assert path.lane()["soul"] == live
    path.publish("soul", {"header": "s", "data": {"count": 8}})
    assert path.lane()["soul"] == world.channel("soul")
    if STAMP in path.exposes:
        stamped = path.stamped()
        assert stamped["_notification_placeholder"] is True
        meta = stamped["_meta"]["agent_meta"]
        assert meta["instruction"] == STAMP_INSTRUCTION
        assert meta["guidance"] == {"transient": {"ref": GUIDANCE_REF, "sources": ["soul"]}}
        assert meta["notifications"]["attention"]["soul"] == world.channel("soul")


def c24_a_failed_or_unstable_read_never_says_nothing_is_active(path: Path, world: World) -> None:
    """channels.md C24 (issue 29): a read that the store refuses, or that stays unstable
    after the coherent read's retries, stamps the check placeholder with
    ``notifications_unavailable`` (a reason and a sentence the model can act on), never
    the bare placeholder that means "no notifications are active"; nothing is committed,
    and the next good read delivers.

    In a racing world a prompt visit (C27) commits the publish's wake some time after the
    publish: what the failed reads commit is measured from once the world has settled,
    so that it counts their commits alone (C23), not that correct wake."""
    path.publish("soul", SOUL)
    world.settle()
    before = committed.read(world.hub.runtime, world.record)
    for how, reason in (("refused", "no_permission"), ("unstable", "unstable")):
        with unreadable(how):
            stamped = path.stamped()
        assert stamped["_notification_placeholder"] is True
        unavailable = stamped["_meta"]["agent_meta"]["notifications_unavailable"]
        assert unavailable["reason"] == reason, stamped
        assert "does not mean that none are active" in unavailable["message"]
        assert set(stamped["_meta"]["agent_meta"]) == {"notifications_unavailable"}
    assert committed.read(world.hub.runtime, world.record) == before
    assert attention_of(path.stamped())["soul"] == world.channel("soul")


def _digest8(full: Any) -> str:
    """block-cap.md B10: sha256 of the canonical text, first 8 hex."""
    text = json.dumps(
        full, ensure_ascii=False, sort_keys=True, separators=(", ", ": "), default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _written(logs: FsPath) -> dict[str, tuple[int, int]]:
    """Each file in ``logs``: its inode and modification time (a write replaces or
    touches it)."""
    written: dict[str, tuple[int, int]] = {}
    if logs.is_dir():
        for f in logs.iterdir():
            st = f.stat()
            written[f.name] = (st.st_ino, st.st_mtime_ns)
    return written


def b8_b10_an_over_cap_lane_has_its_marker_and_spill(path: Path, world: World) -> None:
    """block-cap.md B7-B10: over the cap the lane carries ``overflow`` (absolute spill
    path in ``<workdir>/logs/``, full size, truncated) and the comment naming it; the
    spill holds the full map under its B10 name. The console names the same spill but
    does not write it; the next delivery writes exactly that file.

    In a racing world the publish's wake signal, a check stamped as C24 (C26, C27),
    writes that spill itself; so on the console the world settles after the publish,
    and the console's read must leave ``logs/`` as it was (empty, without prompt
    visits)."""
    text = "x" * (DEFAULT_MAX_CHARS + 2_000)
    path.publish("soul", {"header": "big", "data": {"text": text}})
    if not path.publishes:
        world.settle()
        written = _written(world.workdir / "logs")
    lane = path.lane()
    marker = lane["overflow"]
    assert marker["truncated"] is True and marker["full_chars"] > DEFAULT_MAX_CHARS
    spill = FsPath(marker["path"])
    assert spill.parent == world.workdir / "logs"
    match = SPILL_NAME.fullmatch(spill.name)
    assert match is not None
    assert str(spill) in lane["comment"]
    assert len(channels_of(lane)["soul"]["data"]["text"]) < len(text)
    if not path.publishes:
        assert _written(world.workdir / "logs") == written
        assert world.deliver()["_meta"]["agent_meta"]["notifications"]["attention"]["overflow"][
            "path"
        ] == str(spill)
    full = json.loads(spill.read_text("utf-8"))
    assert full["soul"]["data"]["text"] == text
    assert _digest8(full) == match.group(1)


def memory_item_of_a_turn(path: Path, world: World) -> None:
    """memory-inbox.md M28-M31, M43-M45: a change made to the memory repository outside
    the agent's turns reaches the agent as one memory item naming the path; a turn's
    inbox text tells it to inspect its memory files."""
    world.memory.write("notes/plan.md", "a new plan\n")
    world.memory.commit("plan changed outside the agent")
    items, text = path.memory()
    assert len(items) == 1, items
    changed = [c["path"] for entries in items[0]["payload"]["changes"].values() for c in entries]
    assert "notes/plan.md" in changed
    if text is not None:
        assert text.endswith(
            "Inspect the current files in your memory repository and decide what needs attention."
        )


@dataclass(frozen=True)
class Scenario:
    rules: str
    needs: frozenset[str]
    run: Callable[[Path, World], None]


#: The table: each scenario runs on every path that exposes what it needs.
SCENARIOS = {
    "D9": Scenario(
        "delay.md D9, channels.md C22",
        frozenset({READ}),
        d9_overdue_alarm_shows_in_the_same_read_once,
    ),
    "C22": Scenario(
        "channels.md C22, delay.md D5",
        frozenset({READ}),
        c22_delayed_target_is_omitted_while_active,
    ),
    "C23": Scenario("channels.md C23", frozenset({READ}), c23_a_read_that_delivers_is_not_news),
    "C23/C53": Scenario(
        "channels.md C23, C53", frozenset({READ, ACT}), c53_own_acts_never_wake_a_producer_does
    ),
    "C24": Scenario("channels.md C24", frozenset({LANE}), c24_the_stamp_carries_the_live_payload),
    "C24-unavailable": Scenario(
        "channels.md C24 (issue 29)",
        frozenset({STAMP}),
        c24_a_failed_or_unstable_read_never_says_nothing_is_active,
    ),
    "B8-B10": Scenario(
        "block-cap.md B7-B10", frozenset({LANE}), b8_b10_an_over_cap_lane_has_its_marker_and_spill
    ),
    "memory": Scenario("memory-inbox.md M43-M45", frozenset({MEMORY}), memory_item_of_a_turn),
}

CASES = [
    pytest.param(scenario, name, id=f"{scenario}-{name}")
    for scenario, spec in SCENARIOS.items()
    for name, cls in PATHS.items()
    if spec.needs <= cls.exposes
]


@pytest.mark.parametrize(("scenario", "path"), CASES, indirect=["path"])
def test_rule_holds_on_path(scenario: str, path: Path, world: World) -> None:
    SCENARIOS[scenario].run(path, world)


def test_every_scenario_runs_on_every_listed_path() -> None:
    """Acceptance 2's coverage: the D9 and C22 reads run on every path, each other
    scenario on every path that exposes it, and each path kind is listed."""
    kinds = {name.split(".")[0] for name in PATHS}
    assert kinds == {"sync-inline", "sync-worker", "aio", "aio-worker", "cli", "mcp", "console"}
    ran = {(case.values[0], case.values[1]) for case in CASES}
    for name in PATHS:
        assert {("D9", name), ("C22", name), ("C23", name)} <= ran
    for name in (
        "cli.check",
        "mcp.attention",
        "mcp.check",
        "console.preview",
        "sync-inline.turn",
        "sync-worker.turn",
        "aio.turn",
        "aio-worker.turn",
    ):
        assert ("memory", name) in ran
    for name in (
        "sync-inline.stamp",
        "sync-worker.stamp",
        "aio.stamp",
        "cli.check",
        "mcp.attention",
        "mcp.check",
    ):  # issue 29: sync, aio, CLI and MCP
        assert ("C24-unavailable", name) in ran


def test_d9_the_sync_tick_publishes_an_overdue_alarm_and_wakes(world: World) -> None:
    """delay.md D9 on the scheduler's path, where no consumer reads: the sync tick's
    observation is the composed read too, so the first tick after the deadline publishes
    the alarm (once) and wakes the agent for it (C27)."""
    world.producer.publish("soul", SOUL, wait=True)
    assert (
        world.producer.notification("delay", {"channel": "soul", "seconds": DELAY_SECONDS})[
            "status"
        ]
        == "ok"
    )
    world.tick()
    wakes = world.wakes()
    world.clock.advance(DELAY_SECONDS + 1)
    world.tick()
    assert world.delay_status() == "published"
    assert world.channel("delay-alarm")["header"] == ALARM_HEADER
    assert world.wakes() == wakes + 1
    world.tick()
    assert world.wakes() == wakes + 1
