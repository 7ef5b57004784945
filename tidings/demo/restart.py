"""Demo chapter: the default store keeps what the agent should know across a host restart
(interfaces.md "The default store"; memory-inbox.md's restart rules).

The rest of the tour runs on the in-memory store; this chapter runs real ``tidings up``
processes on the default store, in a temporary state directory (never the user's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tidings._hub import connect
from tidings._turn import Turn
from tidings.demo.memory import _memory_repo
from tidings.demo.tour import Tour
from tidings.store.settings import Settings

#: Longest wait for ``tidings up`` to answer ready, or to stop (seconds).
HOST_SECONDS = 60.0


@contextmanager
def _host(env: dict[str, str], workdir: Path) -> Iterator[dict[str, object]]:
    """``tidings up --port 0 --workdir W`` until the block ends, then SIGTERM."""

    up = subprocess.Popen(
        [sys.executable, "-m", "tidings", "up", "--port", "0", "--workdir", str(workdir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    guard = threading.Timer(HOST_SECONDS, up.kill)  # a host that never answers ends the demo
    guard.start()
    try:
        for line in up.stdout or ():
            ready = json.loads(line) if line.startswith(b"{") else {}
            if ready.get("status") == "ready":
                break
        else:
            raise AssertionError(f"tidings up exited with {up.wait()} before it was ready")
        guard.cancel()
        yield ready
    finally:
        guard.cancel()
        up.terminate()
        try:
            up.wait(HOST_SECONDS)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()


def host_restart(tour: Tour) -> None:
    tour.chapter("The host stops, memory changes while it is down, the change arrives")
    base = tour.workdir / "restart"
    state, workdir, memory = base / "state", base / "agent", base / "memory"
    workdir.mkdir(parents=True)
    _memory_repo(memory)
    host = f"demo-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TIDINGS_", "LINGTAI_"))}
    env.update(TIDINGS_STATE_DIR=str(state), TIDINGS_HOST=host)
    settings = Settings(host=host, state_dir=state)
    tour.say(
        'So far the tour ran on the [bold]in-memory[/] store (connect("embedded")): '
        "nothing in it survives the process. Here a real [bold]tidings up[/] runs with "
        "no Redis URL, so it serves the [bold]default store[/]: a Valkey with an "
        "append-only file, in a temporary state directory (never yours)."
    )
    tour.does(
        cli="tidings up --workdir W      # Ctrl-C stops it",
        python="hub = tidings.connect()   # no URL: finds it through its store.json",
    )
    with _host(env, workdir) as ready:
        tour.show("tidings up's ready line", {k: ready[k] for k in ("engine", "durable")})
        with connect(settings=settings) as hub:  # no URL: found through store.json
            agent = hub.agent(workdir, memory_repo=memory)
            first = agent.startup()
            if first["status"] != "ok":
                raise AssertionError("start-up answers ok")
            tour.expect(first["memory"]["status"] == "baseline", "a baseline")
            turn = agent.prepare_turn()
            if not isinstance(turn, Turn):
                raise AssertionError("a first turn")
            agent.finish_turn(turn)
    tour.say(
        "startup() recorded a baseline of the memory repository and a turn ran; then "
        "the host stopped (as Ctrl-C does: worker and scheduler, then the engine's "
        "SHUTDOWN):"
    )
    tour.does(cli="tidings stop")
    (memory / "notes" / "plan.md").write_text("1. finish the report\n2. call the client\n")
    tour.say(
        "While no host runs, someone edits [bold]notes/plan.md[/]; then "
        "[bold]tidings up[/] starts again and the orchestrator calls [bold]startup()[/]:"
    )
    with _host(env, workdir), connect(settings=settings) as hub:
        agent = hub.agent(workdir, memory_repo=memory)
        started = agent.startup()
        if started["status"] != "ok":
            raise AssertionError("start-up answers ok")
        tour.show("startup() after the restart", started["memory"])
        tour.expect(started["memory"]["status"] == "changed", "the edit made while down is seen")
        turn = agent.prepare_turn()
        if not isinstance(turn, Turn):
            raise AssertionError("the next turn")
        tour.expect("notes/plan.md" in turn.inbox_text, "the event names the edited file")
        tour.show("the next ordinary turn's inbox_text", turn.inbox_text)
        agent.finish_turn(turn)
    tour.say(
        "The checkpoint was in the store's append-only file, so the restart compared "
        "against it. On the in-memory store ([bold]tidings up --ephemeral[/]) the "
        "restart would have answered 'baseline' again and the edit would be lost."
    )
