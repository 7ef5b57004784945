"""The memory event's payload and summary (memory-inbox.md M36-M39) and the coalesced
inbox entry (M45)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.gitrepo import GitRepo
from tidings.jobs.memory import (
    DEFAULT_STANDING_FILES,
    Comparison,
    Snapshot,
    compare,
    event_content,
    render_memory_entry,
)
from tidings.jobs.memory.changes import Change
from tidings.jobs.memory.model import HeadState, Identity, Unreadable
from tidings.jobs.memory.summary import PERSONA_SENTENCE, SUMMARY_BYTES, TRUNCATION_MARK

PAYLOAD_KEYS = {
    "category",
    "trigger",
    "from_branch",
    "to_branch",
    "from_head",
    "to_head",
    "from_detached",
    "to_detached",
    "from_unborn",
    "to_unborn",
    "branch_moved",
    "head_moved",
    "history_rewritten",
    "changes",
    "more",
    "overflow",
    "persona_changed",
    "persona_paths",
    "repository_replaced",
    "reobserved",
    "old_identity",
    "new_identity",
}
A, B = "a1" * 20, "b2" * 20


def snapshot(head: str | None = B, branch: str | None = "main") -> Snapshot:
    return Snapshot(
        Identity("/m", "1:2", A),
        HeadState(branch, branch is None, False, head),
        {},
        0,
        None,
        "2025-03-02T09:20:00.000Z",
        0,
    )


def comparison(**fields: Any) -> Comparison:
    base: dict[str, Any] = {
        "kind": "changed",
        "current": snapshot(),
        "since": "2025-03-02T09:14:07.120Z",
        "old_head": HeadState("main", False, False, A),
    }
    return Comparison(**{**base, **fields})


def change(area: str, path: bytes, kind: str = "modified", **more: Any) -> Change:
    return Change(area, path, kind, **more)  # type: ignore[arg-type]


def content(
    c: Comparison, standing: tuple[str, ...] = DEFAULT_STANDING_FILES
) -> tuple[str, dict[str, Any]]:
    return event_content(c, trigger="pre_turn", standing_files=standing)


def test_payload_fields_and_example_summary() -> None:
    """M36, M37: the payload's fields; the spec's example summary, line for line."""
    c = comparison(
        head_moved=True,
        commit=(change("commit", b"notes/plan.md"),),
        worktree=(change("worktree", b"SOUL.md"), change("worktree", b"todo.md", "added")),
    )
    text, payload = content(c)
    assert set(payload) >= PAYLOAD_KEYS
    assert payload["category"] == "changes" and payload["trigger"] == "pre_turn"
    assert payload["changes"]["worktree"] == [
        {"path": "SOUL.md", "change": "modified", "area": "worktree"},
        {"path": "todo.md", "change": "added", "area": "worktree"},
    ]
    assert payload["more"] == {"commit": 0, "staged": 0, "worktree": 0}
    assert payload["persona_changed"] and payload["persona_paths"] == ["SOUL.md"]
    assert text == (
        "Memory repository changes observed since 2025-03-02T09:14:07.120Z:\n"
        "Head moved on main: a1a1a1a1a1a1 → b2b2b2b2b2b2\n"
        "Committed: modified notes/plan.md\n"
        "Worktree: modified SOUL.md; added todo.md\n"
        "SOUL.md changed on disk; the current session keeps its frozen persona and new "
        "sessions get the new version."
    )
    json.dumps(payload)  # JSON-serialisable


def test_lists_are_bounded_with_more_counts() -> None:
    """M36, M37: at most 30 entries per list, then ``(+N more)``; ``more`` counts the rest."""
    many = tuple(change("worktree", b"f%03d.md" % i, "added") for i in range(45))
    text, payload = content(comparison(worktree=many))
    assert len(payload["changes"]["worktree"]) == 30
    assert payload["more"]["worktree"] == 15
    assert "added f029.md (+15 more)" in text and "f030.md" not in text


def test_summary_is_bounded_by_showing_fewer_entries() -> None:
    """M37: a longer summary shows fewer entries, its ``(+N more)`` counting every entry
    not shown; it is never cut."""
    long_names = tuple(
        change("worktree", ("é" * 700 + f"{i}").encode(), "added") for i in range(30)
    )
    text, _ = content(comparison(worktree=long_names))
    assert len(text.encode("utf-8")) <= SUMMARY_BYTES
    assert not text.endswith(TRUNCATION_MARK)
    assert text.endswith("1 (+28 more)") and text.count("added ") == 2


def test_escaped_paths_in_payload_and_summary() -> None:
    """M26: non-UTF-8 and control characters are escaped and flagged."""
    c = comparison(
        worktree=(change("worktree", b"n\xffo\n.md", "renamed", from_path=b"back\\slash\x7f"),)
    )
    text, payload = content(c)
    [item] = payload["changes"]["worktree"]
    assert item == {
        "path": "n\\xffo\\x0a.md",
        "change": "renamed",
        "area": "worktree",
        "from_path": "back\\\\slash\\x7f",
        "escaped": True,
    }
    assert "renamed back\\\\slash\\x7f → n\\xffo\\x0a.md" in text
    assert "\x7f" not in text and text.count("\n") == 1


def test_persona_sentence_once_for_every_standing_file() -> None:
    """M39: standing files as path or from_path, in the setting's order, one sentence."""
    c = comparison(
        staged=(change("staged", b"MEMORY.md", "renamed", from_path=b"PERSONA.md"),),
        worktree=(change("worktree", b"SOUL.md"),),
    )
    text, payload = content(c)
    assert payload["persona_paths"] == ["PERSONA.md", "SOUL.md", "MEMORY.md"]
    sentence = PERSONA_SENTENCE.format(paths="PERSONA.md, SOUL.md, MEMORY.md")
    assert text.endswith(sentence) and text.count("frozen persona") == 1
    plain, payload = content(comparison(worktree=(change("worktree", b"notes.md"),)))
    assert not payload["persona_changed"] and "persona" not in plain


def test_custom_standing_files_and_branch_move() -> None:
    """M39: ``memory_standing_files`` is exact paths; a branch move whose head trees
    differ in one sets the persona flag."""
    c = comparison(
        branch_moved=True,
        commit=(change("commit", b"agent/ROLE.md"), change("commit", b"x.md", "added")),
    )
    _, payload = content(c, ("agent/ROLE.md", "SOUL.md"))
    assert payload["persona_paths"] == ["agent/ROLE.md"]
    _, payload = content(c)
    assert payload["persona_paths"] == []


def test_replaced_and_reobserved_notices() -> None:
    """M28, M36, M37: replaced carries both identities and no lists; reobserved says the
    previous observation was unreadable."""
    old = Identity("/m", "9:9", A)
    text, payload = content(comparison(category="repository_replaced", old_identity=old))
    assert payload["repository_replaced"] and payload["old_identity"]["git_dir"] == "9:9"
    assert payload["new_identity"]["git_dir"] == "1:2"
    assert "replaced" in text.splitlines()[1]
    text, payload = content(comparison(category="reobserved", since=None, old_head=None))
    assert payload["reobserved"] and payload["from_branch"] is None
    assert text.splitlines()[0] == (
        "Memory repository changes observed at 2025-03-02T09:20:00.000Z:"
    )
    assert "previous observation was unreadable" in text


def test_branch_move_and_rewritten_lines() -> None:
    """M37: branch move line, head move with the rewritten line, 12-digit ids."""
    text, _ = content(comparison(branch_moved=True, current=snapshot(B, None)))
    assert "Branch moved: main at a1a1a1a1a1a1 → detached HEAD at b2b2b2b2b2b2" in text
    detached = comparison(
        head_moved=True, current=snapshot(B, None), old_head=HeadState(None, True, False, A)
    )
    assert "Head moved (detached HEAD): a1a1a1a1a1a1 → b2b2b2b2b2b2" in content(detached)[0]
    text, payload = content(
        comparison(head_moved=True, history_rewritten=True, old_head_unreadable=True)
    )
    assert payload["history_rewritten"]
    assert "History rewritten; inspect with git." in text


def test_no_bodies_messages_authors_or_attribution(tmp_path: Path) -> None:
    """M38: no file bodies, diffs, commit messages or author names; changes are observed,
    never attributed."""
    repo = GitRepo.init(tmp_path / "m")
    repo.write("notes.md", "TOP-SECRET-BODY\n")
    repo.commit("first")
    before = repo.observe()
    repo.write("notes.md", "TOP-SECRET-BODY v2\n")
    repo.commit("SECRET-COMMIT-MESSAGE")
    repo.write("notes.md", "ANOTHER-SECRET\n")
    c = compare(before, repo.observe(before), repo.path)
    text, payload = content(c)
    blob = text + json.dumps(payload)
    for forbidden in (
        "TOP-SECRET",
        "ANOTHER-SECRET",
        "SECRET-COMMIT",
        "Ada",
        "example.invalid",
        "@@",
        "human",
        "user",
        "you changed",
    ):
        assert forbidden not in blob
    assert "observed" in text


def test_reobserved_from_real_repository(tmp_path: Path) -> None:
    """M28: reobserved content from a real observation."""
    repo = GitRepo.init(tmp_path / "m")
    repo.write("a.md", "a")
    text, payload = content(compare(Unreadable("x"), repo.observe(), repo.path))
    assert payload["changes"]["worktree"] == [
        {"path": "a.md", "change": "added", "area": "worktree"}
    ]
    assert "Worktree: added a.md" in text


def event(event_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "payload": payload,
        "observed_at": "2025-03-02T10:00:00.000Z",
        "created_at": "2025-03-02T10:00:00.000Z",
    }


def test_coalesced_entry_merges_events() -> None:
    """M45: every event id named; lists de-duplicated by (area, path) with the newest
    winning; from_* of the oldest, to_* of the newest; flags OR-ed; one persona sentence."""
    _, first = content(
        comparison(
            head_moved=True,
            worktree=(
                change("worktree", b"SOUL.md", "added"),
                change("worktree", b"a.md", "added"),
            ),
        )
    )
    later = comparison(
        since="2025-03-02T10:00:00.000Z",
        old_head=HeadState("main", False, False, B),
        current=snapshot("c3" * 20),
        head_moved=True,
        history_rewritten=True,
        worktree=(change("worktree", b"SOUL.md", "modified"),),
    )
    _, second = content(later)
    text = render_memory_entry([event("e1", first), event("e2", second)])
    lines = text.splitlines()
    assert lines[0] == (
        "Memory repository changes observed since 2025-03-02T09:14:07.120Z (events e1, e2):"
    )
    assert "Head moved on main: a1a1a1a1a1a1 → c3c3c3c3c3c3" in lines
    assert "History rewritten; inspect with git." in lines
    assert "Worktree: modified SOUL.md; added a.md" in lines
    assert text.count("frozen persona") == 1


def test_coalesced_entry_bounds_lists() -> None:
    """M45: ≤ 30 per list, then ``(+N more)`` counting hidden entries and events' ``more``."""
    _, first = content(
        comparison(worktree=tuple(change("worktree", b"a%02d" % i, "added") for i in range(40)))
    )
    _, second = content(
        comparison(worktree=tuple(change("worktree", b"b%02d" % i, "added") for i in range(5)))
    )
    text = render_memory_entry([event("e1", first), event("e2", second)])
    # 30 + 5 distinct listed → 30 shown, 5 hidden, plus 10 left out of the first payload.
    assert "(+15 more)" in text
    assert render_memory_entry([]) == ""


@pytest.mark.parametrize("count", ["abc", "1e999", float("inf"), float("nan"), [3], None])
def test_a_corrupt_more_count_reads_as_none_hidden(count: object) -> None:
    """Stored payloads fail open: a ``more`` count that is not a number hides nothing
    instead of raising out of the coalesced entry."""
    _, payload = content(comparison(worktree=(change("worktree", b"a.md", "added"),)))
    payload = {**payload, "more": {"worktree": count}}
    text = render_memory_entry([event("e1", payload)])
    assert "Worktree: added a.md" in text
    assert "more)" not in text


@pytest.mark.parametrize("trigger", ["startup", "manual", "finish_turn"])
def test_trigger_is_carried(trigger: str) -> None:
    """M36."""
    _, payload = event_content(comparison(), trigger=trigger, standing_files=())
    assert payload["trigger"] == trigger
