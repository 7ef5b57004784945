"""The inbox item's one state table (issue 31; memory-inbox.md M5, M6, M41-M44, M51).

Every write of an item's state in ``store/lua/`` (``HSET`` of ``<id> .. ":state"`` in the
admissions hash, the key a script's header names ``admissions``) is a transition of
``tidings.jobs.inbox.TRANSITIONS`` made by that script, with the same mark beside it; and
every listed transition is such a write.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tidings.cli import memory as memory_cli
from tidings.jobs.inbox import STATES, STORED, TRANSITIONS, projected
from tidings.mcp.tools import INBOX_STATES

LUA = Path(__file__).resolve().parents[2] / "store" / "lua"
#: A script's header entry for the admissions hash: ``-- KEYS: 1 events, 2 admissions, ...``.
ADMISSIONS = re.compile(r"^-- KEYS:.*?\b(\d+) admissions\b", re.MULTILINE)
#: A state write to key ``n``: ``HSET`` of a ``<id> .. ":state"`` field (target captured).
STATE_WRITE = r'redis\.call\("HSET", KEYS\[{n}\], \w+ \.\. ":state", "([\w-]+)"'

#: Marks a transition writes beside the state.
MARK = re.compile(r'\.\. ":(handled_at|ignored_at)"')


def call_text(source: str, start: int) -> str:
    """The text of the ``redis.call(`` that starts at ``start``, up to its closing paren."""
    depth = 0
    for end in range(start, len(source)):
        depth += {"(": 1, ")": -1}.get(source[end], 0)
        if depth == 0 and source[end] == ")":
            return source[start : end + 1]
    raise AssertionError("unbalanced call")


def writes() -> set[tuple[str, str, str | None]]:
    """``(script, target, mark)`` of every state write of an inbox item in store/lua/."""
    found: set[tuple[str, str, str | None]] = set()
    for path in sorted(LUA.glob("*.lua")):
        source = path.read_text()
        header = ADMISSIONS.search(source)
        if header is None:
            continue
        for match in re.finditer(STATE_WRITE.format(n=header.group(1)), source):
            marks = MARK.findall(call_text(source, match.start() + len("redis.call")))
            assert len(marks) <= 1, path.name
            found.add((path.stem, match.group(1), marks[0] if marks else None))
    return found


def test_every_lua_state_write_is_a_listed_transition_and_back() -> None:
    listed = {(t.script, t.target, t.mark) for t in TRANSITIONS}
    assert writes() == listed


def test_transitions_stay_within_the_stored_states() -> None:
    for t in TRANSITIONS:
        assert t.target in STORED, t
        assert t.sources <= {*STORED, None}, t
    assert {t.target for t in TRANSITIONS} == set(STORED)


@pytest.mark.parametrize(
    ("stored", "ignored_at", "seen"),
    [
        (None, None, "pending"),
        ("pending", None, "pending"),
        ("running", None, "processing"),
        ("retryable", None, "deferred"),
        ("needs-repair", None, "needs-repair"),
        ("handled", None, "handled"),
        ("handled", "2026-01-01T00:00:00.000Z", "ignored"),
    ],
)
def test_m5_what_a_reader_sees(stored: str | None, ignored_at: str | None, seen: str) -> None:
    assert projected(stored, ignored_at) == seen
    assert seen in STATES


def test_the_cli_and_mcp_choices_are_the_projected_states() -> None:
    """The CLI keeps its own copy (``tidings inbox`` starts without loading jobs/)."""
    assert memory_cli.STATES == STATES
    assert tuple(INBOX_STATES) == STATES
