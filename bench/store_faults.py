"""Faults of the default store under a burst of publishes (issue 30, acceptance 1 and 2).

Runs ``ROUNDS`` rounds of each fault of :mod:`tests.support.store_faults` (engine hung past
the client's timeout, engine killed, `tidings up` killed, the AOF's last N whole commands
cut after a kill), each round on a channel of its own, beside unstruck bursts (the
baseline). Prints one JSON object: per fault, events acknowledged, acknowledged events
missing from the file and event ids in it twice, summed over the rounds. Goal: 0
duplicated everywhere; 0 lost except under ``aof_tail`` (the documented ``everysec``
window). ``TIDINGS_FAULT_ROUNDS`` sets the rounds (default 10).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.processes import ProcessGroup  # noqa: E402
from tests.support.store_faults import Tally, fault_store, run_round  # noqa: E402

ROUNDS = int(os.environ.get("TIDINGS_FAULT_ROUNDS", "10"))
#: Whole commands cut from the AOF's tail, one value per round in turn.
CUTS = (20, 200, 1000)
FAULTS = ("none", "hang", "kill_engine", "kill_up", "aof_tail")


def main() -> None:
    figures: dict[str, dict[str, int | float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TIDINGS_")}
        env.update(
            PYTHONUNBUFFERED="1",
            TIDINGS_HOST=f"bench-{uuid.uuid4().hex[:8]}",
            TIDINGS_LOG_JSON="true",
            TIDINGS_STATE_DIR=str(Path(tmp) / "state"),
        )
        workdir = Path(tmp) / "wd"
        workdir.mkdir()
        procs = ProcessGroup(env)
        try:
            with fault_store(procs, env, workdir) as (store, agent):
                n = 0
                for fault in FAULTS:
                    started = time.monotonic()
                    total: Tally = {"acked": 0, "lost": 0, "duplicated": 0}
                    struck = 0
                    for r in range(ROUNDS):
                        tally = run_round(
                            fault, store, agent, workdir, n, commands=CUTS[r % len(CUTS)]
                        )
                        n += 1
                        struck += tally["duplicated"] > 0
                        total = {
                            "acked": total["acked"] + tally["acked"],
                            "lost": total["lost"] + tally["lost"],
                            "duplicated": total["duplicated"] + tally["duplicated"],
                        }
                    figures[fault] = {
                        "acked": total["acked"],
                        "lost": total["lost"],
                        "duplicated": total["duplicated"],
                        "rounds_with_duplicates": struck,
                        "seconds": round(time.monotonic() - started, 1),
                    }
        finally:
            procs.cleanup()
    print(
        json.dumps(
            {
                "bench": "store_faults",
                "rounds": ROUNDS,
                "aof_cuts": CUTS,
                "baseline": "none",
                "faults": figures,
            }
        )
    )


if __name__ == "__main__":
    main()
