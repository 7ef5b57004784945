"""interfaces.md "More CLI rules" that need no store (issue 14, acceptance 3): ``--version``,
help text for every option, the listed actions, ``-`` and ``@PATH`` JSON sources,
and exit 2 with one line for a bad Redis URL, before anything is started."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path

import pytest

from tidings import _tool as notification_tool
from tidings import cli
from tidings.cli import memory, tool
from tidings.cli._common import UsageError, parse_json
from tidings.jobs.inbox import STATES


def walk(parser: argparse.ArgumentParser, path: str = "tidings"):  # type: ignore[no-untyped-def]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, f"{path} {name}")
        else:
            yield path, action


def test_every_option_and_argument_has_help_text() -> None:
    missing = [
        f"{path} {action.option_strings or action.dest}"
        for path, action in walk(cli.build_parser())
        if not action.help or action.help == argparse.SUPPRESS
    ]
    assert missing == []


def test_notification_help_lists_every_tool_action() -> None:
    assert set(tool.ACTIONS) == set(notification_tool.ACTIONS)
    assert memory.STATES == STATES
    out = subprocess.run(
        [sys.executable, "-m", "tidings", "notification", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    flat = " ".join(out.split())
    for action in tool.ACTIONS:
        assert action in flat


def test_version_prints_the_installed_version() -> None:
    from importlib.metadata import version

    done = subprocess.run(
        [sys.executable, "-m", "tidings", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == f"tidings {version('tidings')}"


def test_json_from_stdin_and_from_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"from": "stdin"}'))
    assert parse_json("-", "--event") == {"from": "stdin"}
    path = tmp_path / "event.json"
    path.write_text('{"from": "file"}', "utf-8")
    assert parse_json(f"@{path}", "--event") == {"from": "file"}
    with pytest.raises(UsageError) as missing:
        parse_json(f"@{tmp_path / 'nope.json'}", "--event")
    assert missing.value.reason == "unreadable_file"


@pytest.mark.parametrize(
    "command",
    [
        ["worker"],
        ["scheduler"],
        ["up"],
        ["status"],
        ["check"],
        ["publish", "system", "--event", "{}"],
    ],
)
@pytest.mark.parametrize("url", ["ftp://x", "redis://host:port/0", "not a url"])
def test_a_bad_redis_url_exits_2_with_one_line(
    command: list[str], url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # stdout is not a terminal here: every command answers JSON there (--json or not)
    assert cli.main([*command, "--redis-url", url]) == 2
    captured = capsys.readouterr()
    assert len(captured.err.strip().splitlines()) == 1 and "Redis URL" in captured.err
    assert '"reason": "invalid_redis_url"' in captured.out


@pytest.mark.parametrize("command", ["worker", "scheduler", "up", "status"])
def test_a_bad_url_from_the_environment_prints_no_traceback(command: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "TIDINGS_REDIS_URL": "ftp://x"}
    done = subprocess.run(
        [sys.executable, "-m", "tidings", command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "tidings: invalid_redis_url: bad Redis URL in TIDINGS_REDIS_URL: unsupported Redis "
        "URL scheme: 'ftp'"
    ]
