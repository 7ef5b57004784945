"""Issue 34 acceptance 3 (help half): every command's ``--help`` starts with its one-line
description, lists only the shared options that mean something to it, and shows each
option's default; a shared option before a command that does not take it is bad usage.
The table below is the command table: a new command fails here until it is listed."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from tidings import cli
from tidings.cli._common import FLAGS

STORE = ("--redis-url", "--broker-url")
WORKDIR, JSON, INLINE = ("--workdir",), ("--json",), ("--inline",)
AGENT = (*STORE, *WORKDIR, *JSON)
#: An agent command whose read or write may publish (a D9 alarm, an event): --inline.
PUBLISHING = (*AGENT, *INLINE)

#: The shared options each command takes: only those that mean something to it.
SHARED: dict[str, tuple[str, ...]] = {
    "up": (*STORE, *JSON, *WORKDIR),  # its own --workdir: repeatable, registers agents
    "worker": STORE,  # the ready line is JSON whatever the terminal
    "scheduler": STORE,
    "stop": JSON,  # finds `tidings up` by TIDINGS_STATE_DIR, not by a URL
    "check-aof": (),  # the engine's checker on TIDINGS_STATE_DIR's files; its own output
    "agents": (),
    "agents add": AGENT,
    "agents list": (*STORE, *JSON),
    "agents remove": AGENT,
    "agents move": AGENT,
    "publish": PUBLISHING,
    "daemon-event": PUBLISHING,
    "notification": PUBLISHING,
    "check": PUBLISHING,
    "hooks": (),
    "hooks list": PUBLISHING,
    "hooks add": PUBLISHING,
    "hooks edit": PUBLISHING,
    "hooks drop": PUBLISHING,
    "settings": PUBLISHING,
    "delay": PUBLISHING,
    "observe": AGENT,
    "inbox": AGENT,
    "inbox ignore": AGENT,
    "status": (*STORE, *JSON),
    "dead": (*STORE, *JSON),
    "dead requeue": (*STORE, *JSON),
    "web": STORE,
    "demo": (),
    "mcp": (*STORE, *WORKDIR, *INLINE),  # stdout is the protocol: no --json
}
#: Longest description: one line on an 80-column terminal, whatever argparse wraps.
MAX_SUMMARY = 76


def commands(
    parser: argparse.ArgumentParser, path: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    """(name, parser, the help its parent lists it with) for every command, nested too;
    aliases once."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {a.dest: a.help for a in action._choices_actions}
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:
                    continue
                seen.add(id(sub))
                full = f"{path} {name}".strip()
                yield full, sub, str(listed.get(name, ""))
                yield from commands(sub, full)


ALL = list(commands(cli.build_parser()))


def test_the_table_lists_every_command() -> None:
    assert sorted(name for name, _, _ in ALL) == sorted(SHARED)


@pytest.mark.parametrize(("name", "parser", "listed"), ALL, ids=[n for n, _, _ in ALL])
def test_help_starts_with_a_one_line_description(
    name: str, parser: argparse.ArgumentParser, listed: str
) -> None:
    first, blank, usage = parser.format_help().splitlines()[:3]
    assert first == parser.description == listed, name
    assert 0 < len(first) <= MAX_SUMMARY and blank == "" and usage.startswith("usage:")


@pytest.mark.parametrize(
    ("name", "parser"), [(n, p) for n, p, _ in ALL], ids=[n for n, _, _ in ALL]
)
def test_help_lists_only_the_shared_options_that_mean_something(
    name: str, parser: argparse.ArgumentParser
) -> None:
    given = {s for a in parser._actions for s in a.option_strings if s in FLAGS.values()}
    assert given == set(SHARED[name])
    usage = parser.format_help().split("usage:", 1)[1].split("\n\n", 1)[0]
    for flag in set(FLAGS.values()) - given:
        assert flag not in usage, (name, flag)


@pytest.mark.parametrize(
    ("name", "parser"), [(n, p) for n, p, _ in ALL], ids=[n for n, _, _ in ALL]
)
def test_help_shows_every_default(name: str, parser: argparse.ArgumentParser) -> None:
    flat = " ".join(parser.format_help().split())
    for action in parser._actions:
        default = action.default
        if not action.option_strings or default in (None, False, argparse.SUPPRESS, []):
            continue
        assert f"(default: {default})" in flat or "(default" in str(action.help), (
            name,
            action.option_strings,
        )


def test_defaults_a_user_asks_for_are_there() -> None:
    """The issue's example: ``up --help`` gives the default store's port."""
    helps = {name: " ".join(p.format_help().split()) for name, p, _ in ALL}
    port = helps["up"].split("--port PORT ", 1)[1].split(" --ephemeral", 1)[0]
    assert "loopback port of the default store" in port and "6390" in port
    assert "(default: 8377)" in helps["web"] and "(default: 127.0.0.1)" in helps["web"]


@pytest.mark.parametrize(
    ("before", "command"),
    [
        (["--workdir", "w"], ["status"]),
        (["--inline"], ["web"]),
        (["--redis-url", "redis://x:1"], ["demo"]),
        (["--json"], ["worker"]),
        (["--inline"], ["agents", "list"]),
    ],
)
def test_a_shared_option_before_a_command_that_does_not_take_it_is_bad_usage(
    before: list[str], command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main([*before, *command])
    assert done.value.code == 2
    named = " ".join(command)
    assert f"{before[0]} means nothing to `tidings {named}`" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [["status", "--workdir", "w"], ["web", "--inline"], ["demo", "--redis-url", "redis://x:1"]],
)
def test_a_shared_option_after_a_command_that_does_not_take_it_is_bad_usage(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(argv)
    assert done.value.code == 2
    assert f"unrecognized arguments: {argv[1]}" in capsys.readouterr().err


def test_shared_options_still_go_before_the_commands_that_take_them() -> None:
    parser = cli.build_parser()
    args = parser.parse_args(["--workdir", "w", "--json", "publish", "system", "--event", "{}"])
    assert args.workdir == "w" and args.json is True
    args = parser.parse_args(["--workdir", "w", "up"])
    assert args.workdir == "w" and cli._common.refused_options(args) == []
    assert parser.parse_args(["down"]).handler is parser.parse_args(["stop"]).handler
