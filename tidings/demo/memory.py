"""Demo chapter: memory changes reach the agent through its inbox (memory-inbox.md)."""

from __future__ import annotations

from pathlib import Path

import pygit2

from tidings._hub import Hub
from tidings._turn import Turn
from tidings.demo.tour import Tour
from tidings.store import replies
from tidings.store.inbox_keys import InboxKeys

_SIGNATURE = pygit2.Signature("demo", "demo@example.invalid")


def _memory_repo(path: Path) -> None:
    """A memory repository with one commit of MEMORY.md and notes/plan.md."""
    repo = pygit2.init_repository(str(path), initial_head="main")
    (path / "notes").mkdir()
    (path / "MEMORY.md").write_text("# What I remember\n- the user likes short answers\n")
    (path / "notes" / "plan.md").write_text("1. finish the report\n")
    repo.index.add_all()
    repo.index.write()
    repo.create_commit(
        "HEAD", _SIGNATURE, _SIGNATURE, "initial memory", repo.index.write_tree(), []
    )


def _last_id(tour: Tour, stream: str) -> bytes:
    newest = tour.hub.redis.xrevrange(stream, count=1)
    return replies.data(newest[0][0]) if newest else b"0-0"


def _inbox_wakes_after(tour: Tour, stream: str, after: bytes) -> int:
    """Inbox wake entries since ``after`` (notification wakes from the sync tick of
    earlier chapters may come and go meanwhile)."""
    entries = tour.hub.redis.xrange(stream, min=b"(" + after) or []
    return len([1 for _, fields in entries if fields and fields.get(b"kind") == b"inbox"])


def memory_inbox(tour: Tour) -> None:
    tour.chapter("Memory changes arrive in the inbox at the next turn")
    repo = tour.workdir / "memory"
    _memory_repo(repo)
    tour.say(
        "The agent's memory is a Git work tree (here W/memory, with MEMORY.md and "
        "notes/plan.md). The agent is registered with it, and its orchestrator starts:"
    )
    tour.does(
        cli="tidings agents add --workdir W --memory-repo W/memory",
        python='agent = hub.agent(W, memory_repo=W / "memory")',
    )
    tour.does(python="agent.startup()")
    agent = tour.hub.agent(tour.workdir, memory_repo=repo)
    started = agent.startup()
    if started["status"] != "ok":
        raise AssertionError("start-up answers ok")
    tour.expect(started["memory"]["status"] == "baseline", "start-up writes the baseline")
    tour.say("[bold]startup()[/] recorded a baseline checkpoint of it in Redis.")

    wake_stream = InboxKeys(agent.agent_id).wake_stream
    last_wake = _last_id(tour, wake_stream)
    (repo / "MEMORY.md").write_text("# What I remember\n- the user prefers detailed answers\n")
    tour.say(
        "While no turn runs, someone edits [bold]MEMORY.md[/] by hand. Nothing watches "
        "the files and nothing wakes the agent."
    )

    tour.say(
        "Then the host restarts: a new hub on the same store, whose orchestrator calls "
        "[bold]startup()[/] before its first turn, then runs the turn:"
    )
    tour.does(python="agent.startup(); turn = agent.prepare_turn(); ...; agent.finish_turn(turn)")
    restarted = Hub(tour.hub.redis, tour.hub.settings)
    try:
        restarted.start_worker()
        restarted.start_scheduler()
        again = restarted.agent(tour.workdir)
        recovered = again.startup()
        if recovered["status"] != "ok":
            raise AssertionError("start-up answers ok")
        tour.show("startup() after the restart", recovered)
        tour.expect(recovered["memory"]["status"] == "changed", "the edit becomes one event")
        tour.expect(
            not _inbox_wakes_after(tour, wake_stream, last_wake), "memory events never wake"
        )
        turn = again.prepare_turn()
        if not isinstance(turn, Turn):
            raise AssertionError("the turn is prepared")
        tour.expect("MEMORY.md" in turn.inbox_text, "the event names the file")
        tour.show("turn.inbox_text (goes under the next turn message)", turn.inbox_text)
        changes = turn.inbox[0]["payload"].get("changes")
        if not isinstance(changes, dict):
            raise AssertionError("a memory event carries its changes")
        [entry] = changes["worktree"]
        tour.show(
            f"the orchestrator reads {entry['path']} from disk", (repo / entry["path"]).read_text()
        )
        done = again.finish_turn(turn)
        tour.expect(done.get("handled") == [recovered["memory"]["event_id"]], "handled")
        tour.say("finish_turn() reconciles the checkpoint and settles the item:")
        tour.does(cli="tidings inbox --workdir W", python="agent.inbox()")
        tour.show(
            "agent.inbox()",
            [{k: i[k] for k in ("event_id", "source_kind", "state")} for i in again.inbox()],
        )
    finally:
        restarted.close()
