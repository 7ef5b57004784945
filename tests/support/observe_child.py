"""Observe memory repositories in a child process, one JSON line per repository:
``{"case", "status", "reason", "seconds"}`` (M55 tests: a hang fails the parent's
timeout instead of holding the test run).

Usage: ``python -m tests.support.observe_child CASES_JSON`` where the argument is a JSON
list of ``[case, workdir, repo]``.
"""

from __future__ import annotations

import json
import sys
import time

import tidings


def main(cases: list[list[str]]) -> None:
    with tidings.connect("embedded", background=False) as hub:
        for case, workdir, repo in cases:
            agent = hub.agent(workdir, agent_id=case, memory_repo=repo)
            started = time.monotonic()
            result = agent.observe_memory()
            print(
                json.dumps(
                    {
                        "case": case,
                        "status": result["status"],
                        "reason": result.get("reason"),
                        "seconds": round(time.monotonic() - started, 3),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
