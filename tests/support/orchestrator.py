"""A minimal orchestrator process for end-to-end tests (``python -m tests.support.orchestrator``).

It talks to the Redis of ``TIDINGS_REDIS_URL`` with an inline agent, prints one JSON
line per step, and may be stopped by an injected fault (exit 75) at any step:

    startup WORKDIR REPO                 start-up (recovery + observation)
    observe-and-hang WORKDIR REPO        a manual observation that prints
                                         ``{"observing": true}`` between listing and
                                         fingerprint, holding the observation lock, and
                                         hangs there until killed
    crash-finish WORKDIR REPO PATH TEXT [--mark]
                                         prepare a turn, write TEXT to PATH in the memory
                                         repository as the agent's own edit, optionally mark a
                                         side effect, then finish with owned={PATH: blob}
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import pygit2

import tidings
from tidings.jobs.memory import observation


def say(value: Any) -> None:
    sys.stdout.write(json.dumps(value, default=str) + "\n")
    sys.stdout.flush()


def _hang(*args: Any) -> Any:
    say({"observing": True})
    threading.Event().wait()  # until SIGKILL


def main(argv: list[str]) -> int:
    action, workdir, repo = argv[0], argv[1], argv[2]
    with tidings.connect() as hub:
        agent = hub.agent(workdir, memory_repo=repo, inline=True)
        if action == "startup":
            say(agent.startup())
            return 0
        if action == "observe-and-hang":
            observation._fingerprint = _hang  # type: ignore[assignment]
            say(agent.observe_memory())
            return 0
        path, text = argv[3], argv[4]
        turn = agent.prepare_turn()
        assert isinstance(turn, tidings.Turn), turn
        say({"turn_id": turn.turn_id, "inbox": [i["event_id"] for i in turn.inbox]})
        with open(f"{repo}/{path}", "w") as handle:
            handle.write(text)
        if "--mark" in argv:
            say(agent.mark_side_effect(turn))
        blob = str(pygit2.hash(text.encode()))
        say(agent.finish_turn(turn, owned={"paths": {path: blob}, "commits": []}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
