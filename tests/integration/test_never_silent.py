"""interfaces.md "Never silent, never wrong" (issue 29, acceptance 1): the store refuses, and
every command says so in one line.

A real redis-server loads deploy/redis.conf's ACL users (test passwords in place of the
placeholders). Every CLI command runs in this process (``cli.main``: its parsing, its
hub, its printing) as the monitor role, the producer role and a wrong password:

- a refusal is one ``tidings: no_permission: ...`` line on stderr naming the user, the
  refused command and the role that has it, the error JSON on stdout, exit 1, no
  traceback, and never a success-shaped answer (``check`` never prints the placeholder
  as if nothing were active, C24);
- the producer role's rights are enough for every command (nothing is refused);
- a wrong password is ``auth_failed``, exit 2, never ``no_store``.

The long-running commands (``worker``, ``scheduler``, ``up``) run as processes: they
check their rights before any thread starts and stop with the same one line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.memory_repo import MemoryRepo
from tests.support.redis_server import RedisServer
from tidings import cli
from tidings._hub import connect
from tidings.errors import TidingsError
from tidings.store.settings import Settings

pytestmark = [pytest.mark.redis_server]

MONITOR, PRODUCER = "tidings-monitor", "tidings-producer"
HOST = "never-silent"
EVENT = '{"summary": "x"}'


@dataclass(frozen=True)
class Store:
    server: RedisServer
    workdir: Path
    agent_id: str

    def url(self, user: str) -> str:
        return self.server.url_as(user)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """An ACL redis-server with one agent (memory repository, three live channels)
    registered by the workers' user."""
    root = tmp_path_factory.mktemp("never-silent")
    server = RedisServer(root / "redis", acl=True).start()
    workdir = root / "workdir"
    workdir.mkdir()
    repo = MemoryRepo(root / "memory", {"MEMORY.md": "m\n"})
    hub = connect(server.url, settings=Settings(host=HOST, redis_url=server.url))
    try:
        agent = hub.agent(workdir, memory_repo=repo.root, inline=True)
        for channel in ("soul", "goal", "email"):
            assert agent.publish_event(channel, {"summary": channel}, wait=True)["status"] == "ok"
        yield Store(server, workdir, agent.agent_id)
    finally:
        hub.close()
        server.stop()


def commands(workdir: Path, agent_id: str) -> dict[str, list[str]]:
    """Every short-lived CLI command, with arguments that reach the store."""
    w = ["--workdir", str(workdir)]
    return {
        "agents add": ["agents", "add", *w],
        "agents list": ["agents", "list"],
        "agents remove": ["agents", "remove", "--agent-id", "no-such-agent"],
        "agents move": [
            "agents",
            "move",
            "--agent-id",
            agent_id,
            "--host",
            "elsewhere",
            "--settle-seconds",
            "0",
        ],
        "publish --event": ["publish", "soul", "--event", EVENT, *w],
        "publish --envelope": ["publish", "soul", "--envelope", '{"header": "h"}', *w],
        "daemon-event": ["daemon-event", "d1", "--event", EVENT, *w],
        "notification": [
            "notification",
            "dismiss_channel",
            "--input",
            '{"channel": "email", "force": true}',
            *w,
        ],
        "check": ["check", *w],
        "delay": ["delay", "goal", "30", *w],
        "hooks list": ["hooks", "list", *w],
        "settings": ["settings", *w],
        "observe": ["observe", *w],
        "inbox": ["inbox", *w],
        "inbox ignore": ["inbox", "ignore", "0" * 32, *w],
        "status": ["status"],
        "dead": ["dead"],
        "dead requeue": ["dead", "requeue", "no-such-message"],
    }


#: The table's rows, by name.
NAMES = sorted(commands(Path("."), "a"))
#: What the monitor role (counts only) may still do: these read counts or the workdir's
#: files (a daemon event is written by the caller into the workdir, no store write).
MONITOR_MAY = {"agents list", "daemon-event", "hooks list", "settings", "status"}
#: What the issue saw answer falsely or with a traceback (it must be refused now).
MONITOR_REFUSED = {"check", "publish --event", "dead", "inbox", "agents add"}


@dataclass(frozen=True)
class Ran:
    code: int
    out: list[object]
    err: list[str]


def run(
    argv: list[str], url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Ran:
    monkeypatch.setenv("TIDINGS_REDIS_URL", url)
    monkeypatch.setenv("TIDINGS_HOST", HOST)
    # stdout is no terminal here: every command prints JSON; raising is a traceback
    code = cli.main(argv)
    captured = capsys.readouterr()
    out = [json.loads(line) for line in captured.out.splitlines()]
    return Ran(code, out, captured.err.splitlines())


def assert_one_line_refusal(ran: Ran, reason: str, user: str) -> None:
    assert len(ran.out) == 1, ran
    answer = ran.out[0]
    assert isinstance(answer, dict)
    shown = (
        answer
        if "status" in answer
        else (answer["_meta"]["agent_meta"]["notifications_unavailable"])
    )  # check: C24
    assert shown["reason"] == reason, ran
    (line,) = ran.err
    assert line.startswith(f"tidings: {reason}: "), line
    assert "Traceback" not in line
    if reason == "no_permission":  # check's line too, after the model's sentence
        assert user in line and "tidings-producer" in line and "Roles" in line, line


@pytest.mark.parametrize("name", NAMES)
def test_monitor_role_is_refused_in_one_line_or_answers_truly(
    name: str,
    store: Store,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran = run(
        commands(store.workdir, store.agent_id)[name], store.url(MONITOR), capsys, monkeypatch
    )
    if name in MONITOR_MAY:
        assert ran.code == 0 and not ran.err, ran
        return
    assert ran.code == 1, ran
    assert_one_line_refusal(ran, "no_permission", MONITOR)
    if name == "check":  # never the bare placeholder while channels are live (C24)
        assert ran.out[0]["_notification_placeholder"] is True  # type: ignore[index]


def test_the_issue_rows_are_refused() -> None:
    assert MONITOR_REFUSED.isdisjoint(MONITOR_MAY)


@pytest.mark.parametrize("name", NAMES)
def test_producer_role_has_every_right_a_command_needs(
    name: str,
    store: Store,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran = run(
        commands(store.workdir, store.agent_id)[name], store.url(PRODUCER), capsys, monkeypatch
    )
    if name == "agents move":  # back home, for the rows after this one
        run(
            [
                "agents",
                "move",
                "--agent-id",
                store.agent_id,
                "--host",
                HOST,
                "--settle-seconds",
                "0",
            ],
            store.url(PRODUCER),
            capsys,
            monkeypatch,
        )
    answer = ran.out[0]
    assert isinstance(answer, dict)
    assert answer.get("reason") != "no_permission", ran
    if ran.code:  # a truthful error of the command itself (no such id), one line
        assert ran.code == 1 and len(ran.err) == 1, ran
        assert answer["reason"] in ("unknown_agent", "not_found"), ran
    else:
        assert not ran.err, ran


@pytest.mark.parametrize("name", ["status", "check", "publish --event", "agents add"])
def test_a_wrong_password_is_auth_failed_never_no_store(
    name: str,
    store: Store,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wrong = store.url(PRODUCER).replace("test-tidings-producer-password", "wrong")
    ran = run(commands(store.workdir, store.agent_id)[name], wrong, capsys, monkeypatch)
    assert ran.code == 2, ran
    assert_one_line_refusal(ran, "auth_failed", PRODUCER)
    (line,) = ran.err
    assert "wrong user or password" in line and "tidings up" not in line
    assert "wrong" not in line.split("refused")[0].replace("wrong user", "")  # masked


@pytest.mark.parametrize("command", ["worker", "scheduler", "up"])
def test_long_running_commands_check_their_rights_before_starting(
    command: str,
    store: Store,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In this process, with the process-wide set-up (log handler, signal handlers) held
    off: the check comes before any thread or handler would matter."""
    from tidings.cli import _lifecycle, serve

    monkeypatch.setattr(serve._logging, "configure", lambda s: None)
    monkeypatch.setattr(serve, "stop_signals", lambda: _lifecycle.threading.Event())
    monkeypatch.setenv("TIDINGS_STATE_DIR", str(store.workdir.parent / "state"))
    ran = run([command], store.url(MONITOR), capsys, monkeypatch)
    assert ran.code == 1, ran
    assert_one_line_refusal(ran, "no_permission", MONITOR)
    assert ran.err[0].startswith(
        "tidings: no_permission: the store refused user tidings-monitor the command PEXPIRE"
    )


def test_agents_add_refuses_a_path_that_is_no_work_tree_and_empty_clears(
    store: Store,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """interfaces.md, Never silent: ``agents add --memory-repo`` refuses a missing path
    (one line, exit 1, nothing registered); ``--memory-repo ""`` clears, and the
    repository registered again comes back."""
    url = store.url(PRODUCER)
    add = ["agents", "add", "--workdir", str(store.workdir)]
    registered = run(add, url, capsys, monkeypatch).out[0]
    repo = registered["agent"]["memory_repo"]  # type: ignore[index]
    missing = str(store.workdir.parent / "no-such-memory")
    ran = run([*add, "--memory-repo", missing], url, capsys, monkeypatch)
    assert ran.code == 1
    assert_one_line_refusal(ran, "invalid_memory_repo", PRODUCER)
    assert "does not exist" in ran.err[0] and missing in ran.err[0]
    cleared = run([*add, "--memory-repo", ""], url, capsys, monkeypatch)
    assert cleared.code == 0 and cleared.out[0]["agent"]["memory_repo"] is None  # type: ignore[index]
    again = run([*add, "--memory-repo", repo], url, capsys, monkeypatch)
    assert again.code == 0 and again.out[0]["agent"]["memory_repo"] == repo  # type: ignore[index]


def test_python_connect_with_a_wrong_password_is_auth_failed(store: Store) -> None:
    wrong = store.url(PRODUCER).replace("test-tidings-producer-password", "wrong")
    with pytest.raises(TidingsError) as raised:
        connect(wrong, settings=Settings(host=HOST, redis_url=wrong))
    assert raised.value.reason == "auth_failed"
    assert "refused user tidings-producer" in raised.value.message
    assert "wrong@" not in raised.value.message


def test_python_calls_answer_no_permission(store: Store) -> None:
    """The same refusal through ``tidings.connect()``: dict calls answer it, other calls
    raise :class:`tidings.TidingsError` with it (interfaces.md, Errors in Python)."""
    url = store.url(MONITOR)
    with connect(url, settings=Settings(host=HOST, redis_url=url), declare_actors=False) as hub:
        agent = hub.find_agent(store.workdir, inline=True)
        assert agent is not None
        answer = agent.publish_event("soul", {"summary": "x"})
        assert answer["status"] == "error" and answer["reason"] == "no_permission"
        assert MONITOR in answer["message"]
        with pytest.raises(TidingsError) as raised:
            agent.inbox()
        assert raised.value.reason == "no_permission"
        stamped = agent.stamp(agent.notification("check"))
        assert stamped["_meta"]["agent_meta"]["notifications_unavailable"]["reason"] == (
            "no_permission"
        )
    assert os.environ.get("TIDINGS_REDIS_URL") != url
