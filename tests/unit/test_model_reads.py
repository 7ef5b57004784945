"""What the model reads is complete, truthful and bounded (issue 32), through the public API
on fakeredis and a real redis-server: the M37 bound never drops the persona sentence, a
label or a ``(+N more)`` count (M37, M45); a branch move lists its tree-to-tree paths
(M29, M31); a complete ``message`` is never flagged truncated (B15); the packaged manual
carries every directive the notification model gives the agent (C43)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tidings
from tests.support.memory_repo import MemoryRepo
from tidings import Agent, Hub
from tidings._turn import Turn
from tidings.jobs.inbox import Item
from tidings.jobs.memory.summary import PERSONA_SENTENCE, SUMMARY_BYTES

#: A 43-character Chinese note name (issue 32, problem 1).
CHINESE = ("关于长期记忆整理与每日反思的笔记第一二三四五六七八九十" * 2)[:43]
LABELS = ("Committed", "Staged", "Worktree", "Changed by the branch move")
_MORE = re.compile(r" ?\(\+(\d+) more\)$")


@pytest.fixture
def hub(redis_client: Any) -> Iterator[Hub]:
    with tidings.connect(client=redis_client) as h:
        yield h


def workdir(tmp_path: Path, name: str = "w") -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def agent_on(hub: Hub, tmp_path: Path, repo: MemoryRepo, name: str = "w") -> Agent:
    agent = hub.agent(workdir(tmp_path, name), memory_repo=repo.root, inline=True)
    assert agent.startup()["memory"]["status"] == "baseline"
    return agent


def listed(text: str) -> dict[str, tuple[int, int]]:
    """Each list line of a summary: label -> (entries shown, ``(+N more)``)."""
    found = {}
    for line in text.split("\n"):
        label, _, rest = line.partition(": ")
        if label not in LABELS:
            continue
        more = _MORE.search(rest)
        shown = rest[: more.start()] if more else rest
        found[label] = (len(shown.split("; ")) if shown else 0, int(more.group(1)) if more else 0)
    return found


def test_m37_cut_keeps_the_persona_sentence(hub: Hub, tmp_path: Path) -> None:
    """Issue 32 problem 1: an external commit of 30 Chinese-named notes and a PERSONA.md
    edit: the text fits 4096 bytes by showing fewer notes; the entry, the persona
    sentence and the count of the notes not shown survive, in the event and the turn."""
    repo = MemoryRepo(tmp_path / "memory", {"PERSONA.md": "calm\n"})
    agent = agent_on(hub, tmp_path, repo)
    for i in range(30):
        repo.write(f"notes/{CHINESE[:-2]}{i:02d}.md", "note\n")
    repo.write("PERSONA.md", "bold\n")
    repo.commit("external")
    turn = agent.prepare_turn()
    assert isinstance(turn, Turn)
    [item] = turn.inbox
    sentence = PERSONA_SENTENCE.format(paths="PERSONA.md")
    assert item["payload"]["persona_changed"] is True
    for text in (item["summary"], turn.inbox_text):
        assert len(text.encode("utf-8")) <= SUMMARY_BYTES + len("[Inbox] 1 item:\n") + 100
        assert sentence in text and "modified PERSONA.md" in text
        shown, more = listed(text)["Committed"]
        assert shown + more == 31 and 0 < shown < 31
    assert len(item["summary"].encode("utf-8")) <= SUMMARY_BYTES
    assert item["summary"].endswith(sentence)
    assert agent.finish_turn(turn)["handled"] == [item["event_id"]]


def test_m37_cut_keeps_every_label_and_count(hub: Hub, tmp_path: Path) -> None:
    """Issue 32 problem 2: one commit, one staged set and one worktree set of 35 files
    each, paths of ~77 characters: every label survives, each count is what is not shown."""
    stem = "notes/archive/2025/quarterly-reflections/long-running-agent-memory-entry-"
    tracked = {f"{stem}w{i:02d}.md": "v1\n" for i in range(35)}
    repo = MemoryRepo(tmp_path / "memory", tracked)
    agent = agent_on(hub, tmp_path, repo)
    for i in range(35):
        repo.write(f"{stem}c{i:02d}.md", "c\n")
    repo.commit("external")
    for i in range(35):
        repo.write(f"{stem}s{i:02d}.md", "s\n")
    repo.stage(*(f"{stem}s{i:02d}.md" for i in range(35)))
    for name in tracked:
        repo.write(name, "v2\n")
    text = claimed(agent)["summary"]
    assert len(text.encode("utf-8")) <= SUMMARY_BYTES and "…(truncated)" not in text
    lists = listed(text)
    assert set(lists) == {"Committed", "Staged", "Worktree"}
    for shown, more in lists.values():
        assert shown + more == 35 and more > 5


def claimed(agent: Agent) -> Item:
    """The one memory event a turn claims (its whole summary, not the projection's cut)."""
    turn = agent.prepare_turn()
    assert isinstance(turn, Turn)
    [item] = turn.inbox
    assert agent.finish_turn(turn)["handled"] == [item["event_id"]]
    return item


def changed_paths(agent: Agent) -> tuple[list[tuple[str, str]], str]:
    item = claimed(agent)
    payload = item["payload"]
    assert payload["changes"]["staged"] == [] and payload["changes"]["worktree"] == []
    return [(e["path"], e["change"]) for e in payload["changes"]["commit"]], item["summary"]


def test_m29_branch_switch_names_its_paths(hub: Hub, tmp_path: Path) -> None:
    """Issue 32 problem 5 (M29, M31): ``checkout feature`` that changes ``notes.md`` and
    adds ``x.md`` lists both, labelled as the branch move's, as ``reset --hard`` to the
    same commit does."""
    repo = MemoryRepo(tmp_path / "memory", {"notes.md": "main\n"})
    repo.switch("feature", create=True)
    repo.write("notes.md", "feature\n")
    repo.write("x.md", "x\n")
    repo.commit("feature")
    repo.switch("main")
    agent = agent_on(hub, tmp_path, repo)
    repo.switch("feature")
    paths, summary = changed_paths(agent)
    assert paths == [("notes.md", "modified"), ("x.md", "added")]
    assert "Changed by the branch move: modified notes.md; added x.md" in summary.split("\n")
    assert "Branch moved: main at " in summary and "History rewritten" not in summary

    other = MemoryRepo(tmp_path / "other", {"notes.md": "main\n"})
    start = other.head()
    other.write("notes.md", "feature\n")
    other.write("x.md", "x\n")
    ahead = other.commit("ahead")
    other.reset_hard(start)
    resetting = agent_on(hub, tmp_path, other, "w2")
    other.reset_hard(ahead)
    assert changed_paths(resetting)[0] == paths


def test_b15_complete_message_is_not_flagged(hub: Hub, tmp_path: Path) -> None:
    """Issue 32 problem 4 (B15): when only ``preview`` is cut, the untouched ``message``
    keeps its flag as it was; a producer's ``preview_truncated`` becomes true."""
    agent = hub.agent(workdir(tmp_path), inline=True)
    emails = [
        {
            "id": f"e{i}",
            "event_id": f"v{i}",
            "message": f"短消息 {i}",
            "message_truncated": False,
            "preview": "預覽" * 2_000,
            "preview_truncated": False,
        }
        for i in range(3)
    ]
    emails.append({"id": "e3", "message": "whole", "preview": "p" * 4_000})
    capped = agent.cap_persistent({"email": {"emails": emails}})
    records = capped["email"]["emails"]
    assert capped["overflow"]["truncated"] is True
    for record in records[:3]:
        assert record["message"].startswith("短消息") and record["message_truncated"] is False
        assert record["preview_truncated"] is True and record["preview"].endswith("...")
    assert "message_truncated" not in records[3] and "preview_truncated" not in records[3]
    long_message = agent.cap_persistent(
        {"email": {"emails": [{"id": "e9", "message": "m" * 12_000}]}}
    )["email"]["emails"][0]
    assert long_message["message_truncated"] is True


#: C43: each directive the notification model gives the agent, as phrases of the manual.
DIRECTIVES = {
    "tool reads and dismissal, no direct edits": [
        "Act through this tool",
        "Never edit, move or delete files under `.notification/`",
    ],
    "instructions before a verb": ["Read a payload's `instructions` before choosing a verb"],
    "producer's instruction or the narrowest dismiss": [
        "follow the producer's instruction",
        "the narrowest dismiss",
    ],
    "a clear changes only the mirror": [
        "Dismissal clears only the notification mirror, never the producer's own state"
    ],
    "watchers publish atomically, registered before they start; drop does not stop": [
        "A watcher publishes atomically",
        "registered with `add` before it starts",
        "it does not stop the hook's process",
    ],
    "latest stamped copy current": [
        "Only the latest `agent_meta` is current; older copies are historical traces"
    ],
    "overflow marker no reason to reread": [
        "An `overflow` marker alone is no reason to re-read everything",
        "`spill_failed`, call the producer's own tool",
        "absent from every current copy, including omitted and id-only",
    ],
    "complete alternate copy": [
        "A complete alternate current copy needs no re-read, even when a shorter preview's "
        "truncation flag is true"
    ],
    "flags prove nothing": ["A false or missing truncation flag is not proof of completeness"],
    "delay": [
        "A delayed channel keeps receiving updates",
        "`delay-alarm` itself cannot be delayed",
    ],
    "footprint read-only": [
        "may be inspected read-only",
        "Never delete the directory",
        "never bulk-remove its files",
    ],
}


def test_c43_manual_carries_every_directive(hub: Hub, tmp_path: Path) -> None:
    """C43 (issue 32 problem 3): the shipped manual, as the tool answers it, holds each
    directive in tidings' own words."""
    answer = hub.agent(workdir(tmp_path), inline=True).notification("manual")
    assert answer["status"] == "ok"
    text = " ".join(answer["notification_manual"].split())
    missing = {name: [p for p in phrases if p not in text] for name, phrases in DIRECTIVES.items()}
    assert {name: lost for name, lost in missing.items() if lost} == {}
