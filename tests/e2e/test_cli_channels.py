"""The channel model from the shell: ``tidings notification ACTION``, ``hooks``, ``settings``,
``delay``, ``daemon-event`` (issue 4 acceptance 1, CLI half)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import add_agent, run_cli
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.e2e

MANIFEST = {
    "name": "h",
    "channel": "deploys",
    "source": "s",
    "description": "d",
    "how_to_modify": "m",
    "how_to_cancel": "c",
}


def cli(env: dict[str, str], workdir: Path, *args: str) -> tuple[int, Any]:
    done = run_cli([*args, "--workdir", str(workdir), "--json", "--inline"], env)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines, done.stderr
    return done.returncode, json.loads(lines[-1])


def test_every_tool_action_through_the_cli(
    redis_server: RedisServer, e2e_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url}
    w = tmp_path / "w"
    w.mkdir()
    with redis_server.client() as c:
        c.flushall()
    add_agent(w, env)

    def run(*args: str) -> tuple[int, Any]:
        return cli(env, w, *args)

    # state-dependent steps, in order
    assert run("hooks", "add", "--input", json.dumps(MANIFEST)) == (
        0,
        {"status": "ok", "reason": "added", "name": "h"},
    )
    code, edited = run("hooks", "edit", "h", "--input", '{"source": "cron"}')
    assert (code, edited["reason"]) == (0, "edited")
    code, out = run("publish", "deploys", "--event", '{"event_id": "d1", "n": 1}')
    assert (code, out["flushed"]) == (0, True)
    code, out = run("publish", "system", "--event", '{"event_id": "e1", "ref_id": "r1"}')
    code, out = run("daemon-event", "run-1", "--event", '{"text": "started"}')
    assert (code, out["status"]) == (0, "ok")
    code, checked = run("check")
    attention = checked["_meta"]["agent_meta"]["notifications"]["attention"]
    assert code == 0 and {"deploys", "system", "daemon"} <= set(attention)
    code, out = run("notification", "dismiss_event", "--input", '{"event_id": "e1"}')
    assert (code, out["removed"]) == (0, 1)
    code, out = run("notification", "dismiss_channel", "--input", '{"channel": "deploys"}')
    assert (code, out["cleared"]) == (0, True)
    code, out = run(
        "notification", "dismiss_ref", "--input", '{"ref_id": "nope", "channel": "daemon"}'
    )
    assert (code, out["cause"]) == (0, "no_matching_event")
    code, out = run("notification", "edit", "--input", '{"name": "h", "max_events": 3}')
    assert (code, out["reason"]) == (0, "edited")
    assert run("hooks", "drop", "h")[1]["reason"] == "dropped"
    assert run("notification", "drop", "--input", '{"name": "h"}') == (
        1,
        {"status": "error", "reason": "not_found", "message": "no hook named 'h'", "name": "h"},
    )

    # independent steps, in parallel
    steps: list[tuple[str, ...]] = [
        ("notification", "check"),
        ("notification", "list"),
        ("hooks", "list"),
        ("notification", "add", "--input", json.dumps({**MANIFEST, "channel": "soul"})),
        ("notification", "settings"),
        ("settings",),
        ("notification", "manual"),
        ("notification", "delay", "--input", '{"channel": "email", "seconds": "soon"}'),
        ("delay", "email", "soon"),
        ("notification", "explode"),
        ("notification", "settings", "--input", '{"x": 1}'),
    ]
    with ThreadPoolExecutor(4) as pool:
        results = dict(zip(steps, pool.map(lambda s: run(*s), steps), strict=True))
    check = results[("notification", "check")][1]
    assert check["_notification_placeholder"] is True and "_meta" not in check  # bare (C45)
    assert results[("notification", "list")] == (0, {"status": "ok", "hooks": []})
    assert results[("hooks", "list")] == results[("notification", "list")]
    added = results[steps[3]]
    assert added[0] == 1 and added[1]["reason"] == "invalid_manifest"
    assert results[("settings",)] == results[("notification", "settings")]
    assert results[("settings",)][1]["settings"][1]["current"] == 600
    manual = results[("notification", "manual")]
    assert manual[0] == 0 and Path(manual[1]["manual_path"]).is_file()
    assert results[steps[7]] == results[steps[8]]  # the shortcut is the tool action
    assert results[steps[8]][0] == 1  # a non-integer is refused by the delay job
    assert results[steps[9]] == (
        1,
        {
            "status": "error",
            "reason": "unknown_action",
            "message": "Unknown notification action: explode",
        },
    )
    assert results[steps[10]][1]["error_code"] == "INVALID_ARGUMENT"
