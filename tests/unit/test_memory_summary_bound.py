"""The M37 bound never drops meaning (issue 32, acceptance 1): over random path sets,
lengths and scripts, every summary and every coalesced inbox entry (M45) is at most 4096
UTF-8 bytes, keeps the label of every non-empty list, counts in ``(+N more)`` exactly the
entries it does not show, and keeps the persona sentence whenever ``persona_changed``."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tidings
from tests.support.memory_repo import MemoryRepo
from tidings import Hub
from tidings._turn import Turn
from tidings.jobs.memory import (
    DEFAULT_STANDING_FILES,
    Comparison,
    Snapshot,
    event_content,
    render_memory_entry,
)
from tidings.jobs.memory.changes import AREAS, Change
from tidings.jobs.memory.model import HeadState, Identity
from tidings.jobs.memory.summary import PERSONA_SENTENCE, SUMMARY_BYTES, TRUNCATION_MARK

#: Examples per property; ``TIDINGS_HYPOTHESIS_PROFILE=long`` runs many more.
_LONG = os.environ.get("TIDINGS_HYPOTHESIS_PROFILE") == "long"
PURE = settings(max_examples=2_000 if _LONG else 80, deadline=None)
THROUGH_API = settings(
    max_examples=100 if _LONG else 4,
    deadline=None,
    derandomize=not _LONG,
    suppress_health_check=list(HealthCheck),
)

#: Letters of several scripts (no list separators: the shown entries are counted by them).
SCRIPTS = {
    "latin": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.",
    "chinese": "记忆笔记长期反思行动项目清单关于每日整理与的第篇录",
    "cyrillic": "абвгдежзийклмнопрстуфхцчшщыэюя",
    "arabic": "ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
    "devanagari": "अआइईउऊएऐओऔकखगघचछजझटठडढणतथदधनपफबभमयरलवशसह",
    "emoji": "😀😃😄😁🙂🙃😉😊😇🥰😍🤩",
}
LABELS = {"commit": "Committed", "staged": "Staged", "worktree": "Worktree"}
BRANCH_LABEL = "Changed by the branch move"
_MORE = re.compile(r" \(\+(\d+) more\)$|^\(\+(\d+) more\)$")
A, B = "a1" * 20, "b2" * 20


def names(max_segment: int, segments: int = 3) -> st.SearchStrategy[str]:
    """Paths of 1..segments segments in one script each, of 1..max_segment characters."""
    segment = st.sampled_from(sorted(SCRIPTS)).flatmap(
        lambda script: st.text(SCRIPTS[script], min_size=1, max_size=max_segment)
    )
    return st.lists(segment, min_size=1, max_size=segments).map("/".join)


@st.composite
def comparisons(draw: st.DrawFn) -> Comparison:
    paths = draw(st.lists(names(400), max_size=130, unique=True))
    persona = draw(st.lists(st.sampled_from(DEFAULT_STANDING_FILES), unique=True))
    lists: dict[str, list[Change]] = {area: [] for area in AREAS}
    for path in [*paths, *persona]:
        area = draw(st.sampled_from(AREAS))
        kind = draw(st.sampled_from(["added", "modified", "deleted"]))
        lists[area].append(Change(area, path.encode(), kind))  # type: ignore[arg-type]
    branch_moved = draw(st.booleans())
    current = Snapshot(
        Identity("/m", "1:2", A),
        HeadState("other" if branch_moved else "main", False, False, B),
        {},
        0,
        None,
        "2025-03-02T09:20:00.000Z",
        0,
    )
    return Comparison(
        "changed",
        current,
        since="2025-03-02T09:14:07.120Z",
        old_head=HeadState("main", False, False, A),
        branch_moved=branch_moved,
        head_moved=not branch_moved,
        **{area: tuple(sorted(items, key=lambda c: c.path)) for area, items in lists.items()},
    )


def assert_meaning_kept(text: str, payload: Mapping[str, Any], totals: Mapping[str, int]) -> None:
    """The M37 properties of ``text`` rendered from ``payload`` whose lists hold
    ``totals[area]`` entries in all."""
    assert len(text.encode("utf-8")) <= SUMMARY_BYTES
    assert not text.endswith(TRUNCATION_MARK)
    lines = text.split("\n")
    for area, total in totals.items():
        label = BRANCH_LABEL if area == "commit" and payload["branch_moved"] else LABELS[area]
        found = [line for line in lines if line.startswith(f"{label}: ")]
        if not total:
            assert not found
            continue
        [line] = found
        rest = line[len(label) + 2 :]
        more = _MORE.search(rest)
        hidden = int(more.group(1) or more.group(2)) if more else 0
        shown_text = rest[: more.start()] if more else rest
        shown = len(shown_text.split("; ")) if shown_text else 0
        assert shown + hidden == total, line
    if payload["persona_changed"]:
        paths = ", ".join(payload["persona_paths"])
        assert lines[-1] == PERSONA_SENTENCE.format(paths=paths)


@PURE
@given(comparisons())
@example(
    Comparison(  # issue 32 problem 1: 30 Chinese-named notes and a PERSONA.md edit
        "changed",
        Snapshot(
            Identity("/m", "1:2", A),
            HeadState("main", False, False, B),
            {},
            0,
            None,
            "2025-03-02T09:20:00.000Z",
            0,
        ),
        since="x",
        old_head=HeadState("main", False, False, A),
        head_moved=True,
        commit=tuple(
            Change("commit", p.encode(), "added")
            for p in sorted(["PERSONA.md", *(f"notes/{'笔记' * 21}{i:02d}.md" for i in range(30))])
        ),
    )
)
def test_m37_summary_keeps_its_meaning(comparison: Comparison) -> None:
    text, payload = event_content(
        comparison, trigger="manual", standing_files=DEFAULT_STANDING_FILES
    )
    totals = {area: len(getattr(comparison, area)) for area in AREAS}
    assert_meaning_kept(text, payload, totals)


@PURE
@given(st.lists(comparisons(), min_size=1, max_size=3))
def test_m45_coalesced_entry_keeps_its_meaning(batch: Sequence[Comparison]) -> None:
    events = []
    for number, comparison in enumerate(batch):
        _, payload = event_content(
            comparison, trigger="manual", standing_files=DEFAULT_STANDING_FILES
        )
        events.append(
            {
                "event_id": f"e{number}",
                "payload": payload,
                "observed_at": "2025-03-02T09:20:00.000Z",
            }
        )
    text = render_memory_entry(events)
    merged: dict[str, Any] = {
        "branch_moved": any(e["payload"]["branch_moved"] for e in events),
        "persona_changed": any(e["payload"]["persona_changed"] for e in events),
        "persona_paths": list(
            dict.fromkeys(p for e in events for p in e["payload"]["persona_paths"])
        ),
    }
    totals = {}
    for area in AREAS:
        unique = {e["path"] for ev in events for e in ev["payload"]["changes"][area]}
        totals[area] = len(unique) + sum(ev["payload"]["more"][area] for ev in events)
    assert_meaning_kept(text, merged, totals)


@pytest.fixture
def hub(redis_client: Any) -> Iterator[Hub]:
    with tidings.connect(client=redis_client) as h:
        yield h


@THROUGH_API
@given(
    st.lists(names(60, segments=1), min_size=1, max_size=70, unique_by=str.casefold), st.booleans()
)
def test_m37_through_the_public_api(hub: Hub, files: list[str], persona: bool) -> None:
    """The same properties on a real repository: an external commit of ``files`` (and a
    PERSONA.md edit), observed by ``prepare_turn`` on fakeredis and a real redis-server."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = MemoryRepo(Path(tmp) / "memory", {"PERSONA.md": "calm\n"})
        (Path(tmp) / "w").mkdir()
        agent = hub.agent(Path(tmp) / "w", memory_repo=repo.root, inline=True)
        agent.startup()
        written = {f"n/{name}" for name in files}
        for name in written:
            repo.write(name, "x\n")
        if persona:
            repo.write("PERSONA.md", "bold\n")
        repo.commit("external")
        turn = agent.prepare_turn()
        assert isinstance(turn, Turn)
        [item] = turn.inbox
        agent.finish_turn(turn)
        assert item["payload"]["persona_changed"] is persona
        totals = {"commit": len(written) + persona, "staged": 0, "worktree": 0}
        assert_meaning_kept(item["summary"], item["payload"], totals)
