"""One error shape everywhere (issue 29, acceptance 3; interfaces.md "Never silent, never
wrong", channels.md C44).

- Every error answer the code builds (a dict literal or a TypedDict whose ``status`` is
  ``error`` or ``failed``) carries a ``reason``: an AST walk over the five packages, the
  registry's users, so no shape without one can come back.
- Every command of the CLI's command table prints an error the same way: its JSON answer
  on stdout, one ``tidings: <reason>: <message>`` line on stderr, and the exit code of
  interfaces.md (2 for bad input text and for no reachable store). The table is read from the
  parser itself, so a new command is covered or this test fails.
"""

from __future__ import annotations

import argparse
import ast
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidings import cli
from tidings.store.reasons import ALL

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("tidings", "jobs", "store", "scheduler", "workers")
ERROR_STATUSES = {"error", "failed"}


def _trees() -> Iterator[tuple[Path, ast.Module]]:
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            yield path, ast.parse(path.read_text("utf-8"))


def _literal(node: ast.expr | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _error_dicts(tree: ast.Module) -> Iterator[ast.Dict]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [_literal(k) for k in node.keys]
            if "status" in keys and _literal(node.values[keys.index("status")]) in ERROR_STATUSES:
                yield node


def _is_literal_of(annotation: ast.expr, values: set[str]) -> bool:
    return (
        isinstance(annotation, ast.Subscript)
        and getattr(annotation.value, "id", "") == "Literal"
        and any(
            _literal(e) in values for e in ast.walk(annotation.slice) if isinstance(e, ast.Constant)
        )
    )


def _error_typeddicts(tree: ast.Module) -> Iterator[ast.ClassDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            fields = {
                s.target.id: s.annotation
                for s in node.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            }
            status = fields.get("status")
            if status is not None and _is_literal_of(status, ERROR_STATUSES):
                yield node


def test_every_error_answer_the_code_builds_carries_a_reason() -> None:
    missing = []
    for path, tree in _trees():
        where = path.relative_to(REPO)
        for node in _error_dicts(tree):
            keys = [_literal(k) for k in node.keys]
            spread = None in keys  # ``{**answer, ...}`` keeps the answer's reason
            if "reason" not in keys and not spread:
                missing.append(f"{where}:{node.lineno}")
            elif "reason" in keys:
                reason = _literal(node.values[keys.index("reason")])
                assert reason is None or reason in ALL, f"{where}:{node.lineno}: {reason}"
        for cls in _error_typeddicts(tree):
            names = {
                s.target.id
                for s in cls.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            }
            if "reason" not in names:
                missing.append(f"{where}:{cls.lineno} class {cls.name}")
    assert not missing, f"error answers without a reason (C44): {missing}"


# -- the command table ---------------------------------------------------------------


def command_table() -> list[tuple[str, ...]]:
    """Every leaf command of the parser (``agents`` alone is not one)."""
    found: list[tuple[str, ...]] = []

    def walk(parser: argparse.ArgumentParser, prefix: tuple[str, ...]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if prefix and (not subs or parser.get_default("handler") is not None):
            found.append(prefix)
        for action in subs:
            for name, sub in action.choices.items():
                walk(sub, (*prefix, name))

    walk(cli.build_parser(), ())
    return found


#: Arguments that make each command reach for its store (beyond ``--redis-url``).
ARGS: dict[tuple[str, ...], list[str]] = {
    ("up",): [],
    ("worker",): [],
    ("scheduler",): [],
    ("agents", "add"): [],
    ("agents", "list"): [],
    ("agents", "remove"): ["--agent-id", "a"],
    ("agents", "move"): ["--agent-id", "a", "--host", "h"],
    ("publish",): ["soul", "--event", "{}"],
    ("daemon-event",): ["d", "--event", "{}"],
    ("notification",): ["check"],
    ("check",): [],
    ("hooks", "list"): [],
    ("hooks", "add"): ["--input", "{}"],
    ("hooks", "edit"): ["n", "--input", "{}"],
    ("hooks", "drop"): ["n"],
    ("settings",): [],
    ("delay",): ["soul", "5"],
    ("observe",): [],
    ("inbox",): [],
    ("inbox", "ignore"): ["0" * 32],
    ("status",): [],
    ("dead",): [],
    ("dead", "requeue"): ["m"],
    ("web",): ["--port", "0"],
    ("mcp",): [],
}
#: Commands that never reach a store: a scripted tour on its own embedded store, the
#: check of the default store's files, and stopping the `tidings up` of the state directory.
NO_STORE = {("demo",), ("check-aof",), ("stop",), ("down",)}
#: ``tidings mcp`` speaks MCP on stdout: its errors are the stderr line alone.
STDERR_ONLY = {("mcp",)}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_table_covers_every_command() -> None:
    assert set(command_table()) == set(ARGS) | NO_STORE


@pytest.fixture
def quiet_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The long-running commands' process-wide set-up (log handler, signal handlers)
    held off: the error comes before they would matter."""
    from tidings import _logging
    from tidings.cli import _lifecycle, serve

    monkeypatch.setattr(_logging, "configure", lambda s: None)
    monkeypatch.setattr(serve, "stop_signals", lambda: _lifecycle.threading.Event())
    monkeypatch.setenv("TIDINGS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("TIDINGS_REDIS_URL", raising=False)
    monkeypatch.delenv("TIDINGS_BROKER_URL", raising=False)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err.splitlines()


def assert_error(
    code: int, out: str, err: list[str], reason: str, exit_code: int, *, stdout: bool = True
) -> None:
    assert code == exit_code, (code, out, err)
    (line,) = err
    assert line.startswith(f"tidings: {reason}: ") and len(line) > len(reason) + 11, line
    if stdout:
        (answer,) = [json.loads(x) for x in out.splitlines()]
        assert answer["status"] == "error" and answer["reason"] == reason, answer
        assert line == f"tidings: {reason}: {' '.join(answer['message'].split())}"
    else:
        assert out == ""


@pytest.mark.parametrize("command", sorted(ARGS), ids=" ".join)
def test_no_reachable_store_is_one_line_exit_2_on_every_command(
    command: tuple[str, ...],
    quiet_process: None,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    url = f"redis://127.0.0.1:{closed_port()}/0"
    accepts = cli.build_parser().parse_args([*command, *ARGS[command]]).accepts
    argv = [*command, *ARGS[command], "--redis-url", url]
    argv += ["--json"] if "json" in accepts else []  # stdout is no terminal here: JSON anyway
    argv += ["--workdir", str(tmp_path)] if "workdir" in accepts else []
    code, out, err = run(argv, capsys)
    assert_error(code, out, err, "no_store", 2, stdout=command not in STDERR_ONLY)


#: Every JSON option, by the command that takes it.
JSON_OPTIONS = [
    ["publish", "soul", "--event"],
    ["publish", "soul", "--envelope"],
    ["daemon-event", "d", "--event"],
    ["notification", "dismiss_channel", "--input"],
    ["hooks", "add", "--input"],
    ["hooks", "edit", "n", "--input"],
]


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '"text"', "3"])
@pytest.mark.parametrize("option", JSON_OPTIONS, ids=" ".join)
def test_bad_json_text_is_invalid_json_exit_2_whether_or_not_it_parses(
    option: list[str],
    text: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """interfaces.md: 2 for bad input text, for JSON that does not parse and for JSON that is
    not the object the option needs alike (the issue saw 2 for one and 1 for the other)."""
    code, out, err = run([*option, text, "--workdir", str(tmp_path), "--json"], capsys)
    assert_error(code, out, err, "invalid_json", 2)


@pytest.mark.parametrize("workdirs", [[], ["a", "b"]], ids=["none", "two"])
def test_up_memory_repo_goes_with_exactly_one_workdir(
    workdirs: list[str],
    quiet_process: None,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """interfaces.md, Never silent: ``up --memory-repo`` without exactly one ``--workdir`` is a
    usage error (exit 2), before any store is touched."""
    argv = ["up", "--memory-repo", str(tmp_path), "--json"]
    for workdir in workdirs:
        argv += ["--workdir", str(tmp_path / workdir)]
    code, out, err = run(argv, capsys)
    assert_error(code, out, err, "bad_usage", 2)
    assert "exactly one --workdir" in err[0]


@pytest.mark.parametrize("token", ["short", "x" * 31])
def test_a_weak_console_token_off_loopback_is_refused(
    token: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """interfaces.md, Never silent: ``TIDINGS_WEB_TOKEN`` under 32 characters off loopback."""
    monkeypatch.setenv("TIDINGS_WEB_TOKEN", token)
    code, out, err = run(["web", "--host", "0.0.0.0", "--port", "0"], capsys)
    assert_error(code, out, err, "weak_token", 2)
    assert "at least 32" in err[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["publish"],
        ["status", "--no-such-option"],
        ["no-such-command"],
        ["--workdir", "w", "status"],
    ],
    ids=" ".join,
)
def test_a_usage_error_is_one_line_too(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """The parser's own errors (a missing argument, an unknown option or command) follow
    the same rule: JSON on stdout, one ``tidings: bad_usage: ...`` line, exit 2."""
    with pytest.raises(SystemExit) as done:
        cli.main(argv)
    captured = capsys.readouterr()
    assert_error(int(str(done.value.code)), captured.out, captured.err.splitlines(), "bad_usage", 2)
    assert "--help" in captured.err
