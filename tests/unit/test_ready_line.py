"""Issue 34 acceptance 3: ``tidings up``'s line for people names the store and how durable
it is, the agents by workdir name, the console's URL and how to stop (the e2e test
tests/e2e/test_up_stop.py runs it on a terminal)."""

from __future__ import annotations

import sys

import pytest

from tidings import cli
from tidings.cli._common import wants_json
from tidings.cli.ready_line import UpReady, scheduler_changes, up_line


def ready(**changes: object) -> UpReady:
    base: UpReady = {
        "status": "ready",
        "role": "up",
        "url": "redis://:***@127.0.0.1:6390/0",
        "embedded": False,
        "durable": True,
        "host": "h",
        "state_dir": "/s",
        "engine": "valkey 9.1.2",
        "fsync": "everysec",
        "agents": [],
        "metrics_port": None,
    }
    return {**base, **changes}  # type: ignore[typeddict-item]


def test_the_default_store_with_its_durability() -> None:
    agents = [{"agent_id": f"id{n}", "workdir": f"/w/agent-{n}"} for n in range(6)]
    assert up_line(ready(agents=agents)) == (
        "tidings up: ready; store valkey 9.1.2 (AOF, fsync everysec) at 127.0.0.1:6390, data "
        "in /s; 6 agents: agent-0, agent-1, agent-2, agent-3 and 2 more; console: run "
        "`tidings web`, then open http://127.0.0.1:8377/; Ctrl-C to stop"
    )


def test_a_redis_of_ones_own_and_no_agents() -> None:
    line = up_line(ready(url="redis://:***@db:6379/0", state_dir=None, engine=None, fsync=None))
    assert line.startswith(
        "tidings up: ready; store redis://:***@db:6379/0; no agents yet "
        "(tidings agents add --workdir DIR); "
    )


def test_the_first_leader_event_is_the_ready_line_and_later_ones_are_lines_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    on_event = scheduler_changes()
    on_event({"status": "leader"})
    assert capsys.readouterr() == ("", "")
    on_event({"status": "standby"})
    on_event({"status": "leader"})
    assert capsys.readouterr().err.splitlines() == [
        "tidings up: this host's scheduler is on standby: another process holds its lease",
        "tidings up: this host's scheduler leads again",
    ]


@pytest.mark.parametrize(
    ("terminal", "flag", "as_json"),
    [(True, False, False), (True, True, True), (False, False, True)],
)
def test_json_for_pipes_and_for_json_the_line_for_a_terminal(
    terminal: bool, flag: bool, as_json: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `tidings up` (and `tidings stop`) print: ``wants_json`` decides."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: terminal)
    args = cli.build_parser().parse_args(["up", *(["--json"] if flag else [])])
    assert wants_json(args) is as_json
