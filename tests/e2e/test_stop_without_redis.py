"""A stop with the store gone is prompt: SIGTERM after the redis-server was SIGKILLed
ends each long-running command within seconds, exit 0, no traceback.

Before, the signal left every Redis call of the stop (and of each thread it joins) to
ride out its 30 s failover retry: 32 s for a worker or a pool, 60 s for the scheduler
and 65 s for ``up``. Now the signal ends the retries (store.connection.stop_retrying).
"""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from tests.support.groups import TIMING
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup
from tests.support.proctree import descendants, running
from tests.support.redis_server import RedisServer

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server, TIMING]

#: The longest stop allowed (s). What remains of a stop is dramatiq's 3 s consumer
#: restart pause, twice for ``up`` (its two workers stop one after the other).
STOP_SECONDS = 10.0
#: How long the process runs on with its store gone before the signal (s): its consumers
#: (polling every 20 ms) and its ticks are all inside their failover retries by then.
OUTAGE_SECONDS = 1.0

#: The command, and the (status, role) of the lines that say all of it runs: a pool's
#: children write theirs after the parent's, and a scheduler leads after its ready line.
COMMANDS = {
    "worker": (("worker", "--threads", "2"), [("ready", "worker")]),
    "pool": (
        ("worker", "--processes", "2", "--threads", "1"),
        [("ready", "workers"), ("ready", "worker"), ("ready", "worker")],
    ),
    "scheduler": (("scheduler",), [("leader", "scheduler")]),
    "up": (("up", "--threads", "2"), [("leader", "scheduler")]),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_sigterm_with_the_store_gone_stops_within_seconds(
    procs: ProcessGroup, own_redis: RedisServer, name: str
) -> None:
    args, lines = COMMANDS[name]
    serving = list(lines)
    proc = procs.start(*args, env={"TIDINGS_REDIS_URL": own_redis.url})
    while serving:
        line = proc.wait_json(lambda v: (v.get("status"), v.get("role")) in serving)
        serving.remove((line["status"], line["role"]))
    family = {proc.pid, *descendants(proc.pid)}
    own_redis.kill()
    with pytest.raises(subprocess.TimeoutExpired):  # it rides the outage out meanwhile
        proc.process.wait(OUTAGE_SECONDS)
    proc.process.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    try:
        code = proc.process.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"{args}: still running {STOP_SECONDS} s after SIGTERM; stderr tail: {proc.stderr[-5:]}"
        )
    took = time.monotonic() - signalled
    wait_until(
        lambda: not any(running(pid) for pid in family),
        timeout=5,
        what="every process of the command gone",
    )
    proc.stop()  # collects the rest of its output
    assert code == 0, proc.stderr[-5:]
    assert took < STOP_SECONDS
    assert not [line for line in proc.stderr if "Traceback" in line], proc.stderr
