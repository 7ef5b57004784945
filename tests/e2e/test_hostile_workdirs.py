"""Issue 11 acceptance 2: hostile files never stop a real ``tidings up`` from waking.

``tidings up`` runs against a redis-server of the test's own with a 50 ms sync
interval. One agent's workdir holds a ``mcp.x.json`` nested 5,000 deep (channels.md
C47), another's a ``mcp.y.json`` with a lone surrogate escape (C48). Each is still
woken when its ``email.json`` changes, and the process logs no traceback (C52).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup, add_agent
from tests.support.redis_server import RedisServer
from tidings.store.keys import AgentKeys

pytestmark = pytest.mark.e2e

#: Acceptance 2: the sync interval of the ``tidings up`` under test (s).
SYNC_INTERVAL = "0.05"

HOSTILE = {
    "deep": ("mcp.x.json", "[" * 5000 + "]" * 5000),
    "surrogate": ("mcp.y.json", '{"header": "cut emoji \\ud83d", "data": {"t": "\\udc00"}}'),
}


def write_direct(workdir: Path, name: str, text: str) -> None:
    """An outside producer: temp file + rename, no tidings call."""
    d = workdir / ".notification"
    d.mkdir(exist_ok=True)
    temp = d / f".{name}.outside.tmp"
    temp.write_text(text)
    os.replace(temp, d / name)


def attention_of(entry: dict[str, Any]) -> dict[str, Any]:
    return dict(entry["result"]["_meta"]["agent_meta"]["notifications"].get("attention", {}))


def woken_with_email(redis: Any, agent_id: str) -> bool:
    for _, fields in redis.xrange(AgentKeys(agent_id).wake_stream):
        entry = json.loads(fields[b"entry"])
        if attention_of(entry).get("email", {}).get("header") == "new mail":
            return True
    return False


def test_hostile_workdirs_still_wake_on_email(
    procs: ProcessGroup, e2e_env: dict[str, str], own_redis: RedisServer, tmp_path: Path
) -> None:
    env = {**e2e_env, "TIDINGS_REDIS_URL": own_redis.url, "TIDINGS_SYNC_INTERVAL": SYNC_INTERVAL}
    agents: dict[str, tuple[Path, str]] = {}
    for kind, (name, text) in HOSTILE.items():
        workdir = tmp_path / kind
        workdir.mkdir()
        write_direct(workdir, name, text)
        agents[kind] = (workdir, add_agent(workdir, env)["agent_id"])
    up = procs.start("up", env=env)
    up.wait_ready()
    redis = own_redis.client()
    for kind, (workdir, agent_id) in agents.items():
        write_direct(workdir, "email.json", json.dumps({"header": "new mail"}))
        wait_until(
            lambda a=agent_id: woken_with_email(redis, a),
            timeout=15,
            what=f"the {kind} agent woken for email",
        )
    assert up.alive()
    tracebacks = [line for line in up.stderr if "Traceback" in line]
    assert not tracebacks, tracebacks[:2]
    redis.close()
