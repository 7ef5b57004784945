"""Typed seams around the Lua scripts (issue 10): one wrapper per script, callers use
the wrappers, shared Lua lives in one prelude, one bytes-to-str helper."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from redis import Redis

from tidings.store import replies
from tidings.store.scripts import PRELUDES, ScriptReplyError, Scripts, parts, source
from tidings.store.scripts import inbox as inbox_scripts

REPO = Path(__file__).resolve().parents[2]
LUA = REPO / "store" / "lua"
WRAPPERS = REPO / "store" / "scripts"
LAYERS = ("tidings", "workers", "jobs", "scheduler", "store")


def _script_names() -> set[str]:
    return {p.stem for p in LUA.glob("*.lua") if not p.stem.startswith("prelude_")}


def test_every_script_has_a_wrapper() -> None:
    wrapped = "\n".join(p.read_text() for p in WRAPPERS.glob("*.py") if p.name != "__init__.py")
    missing = {n for n in _script_names() if f'"{n}"' not in wrapped}
    assert not missing, f"scripts without a typed wrapper in store/scripts/: {missing}"


def test_no_caller_runs_a_script_by_name() -> None:
    """Outside store/scripts/, nobody passes positional KEYS/ARGV lists to the runner."""
    names = _script_names()
    offenders = []
    for layer in LAYERS:
        for path in (REPO / layer).rglob("*.py"):
            if WRAPPERS in path.parents:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value in names
                ):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not offenders


def test_no_copies_of_the_bytes_to_str_helper() -> None:
    pattern = re.compile(r"def _text\(\w+: (Any|bytes)|\.decode\([^)]*\) if isinstance\(")
    copies = [
        str(p.relative_to(REPO))
        for layer in LAYERS
        for p in (REPO / layer).rglob("*.py")
        if pattern.search(p.read_text())
    ]
    assert not copies


def test_m8_retention_is_one_prelude() -> None:
    prelude = (LUA / "prelude_retention.lua").read_text()
    for name in ("inbox_finish", "inbox_ignore"):
        assert PRELUDES[name] == ("retention",)
        assert source(name).startswith(prelude)
        assert "ZPOPMIN" not in (LUA / f"{name}.lua").read_text()


def test_m8_ignore_prunes_beyond_the_bound(redis_client: Redis) -> None:
    """M8 through the prelude: the oldest terminal item is forgotten, the rest stay."""
    scripts = Scripts(redis_client)
    for n in range(3):
        event_id = f"{n:032x}"
        admitted = inbox_scripts.admit(
            scripts,
            "agent",
            event_id=event_id,
            event_json="{}",
            created_ms=n,
            key_digest=None,
            open_bound=10,
            wake_entry_json=None,
        )
        assert admitted.outcome == "ok"
        ignored = inbox_scripts.ignore(
            scripts, "agent", event_id=event_id, now_iso="t", now_ms=n, terminal_kept=2
        )
        assert ignored == inbox_scripts.Ignored("ok", "pending")
    gone = inbox_scripts.ignore(
        scripts, "agent", event_id=f"{0:032x}", now_iso="t", now_ms=9, terminal_kept=2
    )
    assert gone.outcome == "not_found"
    kept = inbox_scripts.ignore(
        scripts, "agent", event_id=f"{2:032x}", now_iso="t", now_ms=9, terminal_kept=2
    )
    assert kept.outcome == "unchanged"


def test_unknown_reply_shape_raises() -> None:
    with pytest.raises(ScriptReplyError):
        parts("inbox_admit", 1)
    with pytest.raises(ScriptReplyError):
        inbox_scripts.admit(
            lambda name, keys, args: [b"surprise"],  # type: ignore[arg-type]
            "agent",
            event_id="e",
            event_json="{}",
            created_ms=0,
            key_digest=None,
            open_bound=1,
            wake_entry_json=None,
        )


@pytest.mark.parametrize(
    ("raw", "text"), [(b"caf\xc3\xa9", "café"), ("x", "x"), (7, "7"), (b"\xff", "\ufffd")]
)
def test_replies_text(raw: object, text: str) -> None:
    assert replies.text(raw) == text
    assert replies.text_or_none(None) is None
