"""Faults of the default store under a burst of publishes (issue 30, acceptance 1 and 2).

Shared by ``tests/e2e/test_store_retries.py`` (a few rounds) and ``bench/store_faults.py``
(every round, counts printed). One ``tidings up`` serves a temporary state directory on a
fixed port; producer threads in this process publish into one channel and record every
``event_id`` answered ``ok``; a fault strikes mid-burst; afterwards the channel file is read
and each event id counted. Faults:

* ``hang``: the engine SIGSTOPped past the client's command timeout, then SIGCONTed (the
  client's failover retry re-sends the script that already ran);
* ``kill_engine``: the engine SIGKILLed, then `tidings up` too, and `up` restarted;
* ``kill_up``: `tidings up` SIGKILLed (its engine stops with it) and restarted at once;
* ``aof_tail``: `up` and engine SIGKILLed, the last N whole commands cut from the AOF
  (what ``appendfsync everysec`` may lose on power failure), `up` restarted.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import tidings
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup, TidingsProcess
from tests.support.redis_server import free_port
from tidings.store import connection
from tidings.store.settings import Settings

#: Each round publishes into a channel of its own, every event retained.
CHANNELS = [f"mcp.burst{n}" for n in range(64)]
RETAINED = 10_000
#: Producer threads: several publishes are in flight when a fault strikes.
PRODUCERS = 4
#: The client's command timeout in the producing process (the shipped 30 s would make a
#: hang past it cost 30 s a round).
CLIENT_TIMEOUT = 0.5
#: How long the engine stays stopped: past the client timeout, well within its retry budget.
HANG_SECONDS = 1.5
#: Acknowledged events before the fault strikes, and after the store is back.
BEFORE_FAULT = 40
AFTER_FAULT = 20
READY_SECONDS = 60.0


class Tally(TypedDict):
    """One round: events answered ``ok``, those missing from the file, ids in it twice."""

    acked: int
    lost: int
    duplicated: int


@dataclass
class Burst:
    """Producer threads publishing into ``channel`` until stopped."""

    agent: Any
    channel: str
    acked: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Burst:
        for n in range(PRODUCERS):
            thread = threading.Thread(target=self._run, args=(n,), daemon=True)
            thread.start()
            self.threads.append(thread)
        return self

    def _run(self, producer: int) -> None:
        n = 0
        while not self.stop.is_set():
            with contextlib.suppress(Exception):  # a call the fault cut is not acknowledged
                result = self.agent.publish_event(self.channel, {"p": producer, "n": n})
                if result.get("status") == "ok":
                    self.acked.append(result["event_id"])
            n += 1

    def wait_acked(self, count: int, timeout: float = 60.0) -> None:
        target = len(self.acked) + count
        wait_until(
            lambda: len(self.acked) >= target,
            timeout=timeout,
            what=f"{count} more acknowledged publishes",
        )

    def finish(self) -> list[str]:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)
        assert not any(t.is_alive() for t in self.threads), "a producer is still blocked"
        return list(self.acked)


def file_ids(workdir: Path, channel: str) -> list[str]:
    """Every event id in the channel file, in file order."""
    try:
        events = json.loads((workdir / ".notification" / f"{channel}.json").read_bytes())
        return [e["event_id"] for e in events["data"]["events"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def tally(acked: list[str], ids: list[str]) -> Tally:
    counts = Counter(ids)
    return {
        "acked": len(acked),
        "lost": sum(1 for e in acked if e not in counts),
        "duplicated": sum(n - 1 for n in counts.values() if n > 1),
    }


def engines(state: Path) -> list[int]:
    """Pids of every engine serving ``state`` (found by its working directory)."""
    data = os.path.realpath(state / "store" / "data")
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry}/cwd") == data:
                    found.append(int(entry))
    return found


def aof_units(raw: bytes) -> list[tuple[int, int]]:
    """(start, end) byte spans of the whole commands of an AOF, a MULTI..EXEC block as
    one unit (a cut never splits a script's effects)."""
    units: list[tuple[int, int]] = []
    pos, block = 0, -1
    while pos < len(raw):
        start = pos
        if raw[pos : pos + 1] == b"#":  # an annotation line
            pos = raw.index(b"\r\n", pos) + 2
            units.append((start, pos))
            continue
        end = raw.index(b"\r\n", pos)
        count = int(raw[pos + 1 : end])
        pos = end + 2
        words = []
        for _ in range(count):
            end = raw.index(b"\r\n", pos)
            size = int(raw[pos + 1 : end])
            words.append(raw[end + 2 : end + 2 + size])
            pos = end + 2 + size + 2
        name = words[0].upper() if words else b""
        if name == b"MULTI":
            block = start
        elif name == b"EXEC" and block >= 0:
            units.append((block, pos))
            block = -1
        elif block < 0:
            units.append((start, pos))
    return units


def newest_aof(state: Path) -> Path:
    """The incremental AOF the engine appends to (the manifest's newest ``type i``)."""
    folder = state / "store" / "data" / "appendonlydir"
    manifest = next(folder.glob("*.manifest")).read_text()
    incr = [line.split() for line in manifest.splitlines() if line.endswith("type i")]
    return folder / max(incr, key=lambda words: int(words[3]))[1]


def cut_aof_tail(state: Path, commands: int, floor: int) -> int:
    """Cut the last ``commands`` whole commands from the newest AOF, none of its first
    ``floor`` bytes (what the round found there); returns how many commands went."""
    newest = newest_aof(state)
    raw = newest.read_bytes()
    units = [u for u in aof_units(raw) if u[0] >= floor]
    cut = units[-commands:] if commands > 0 else []
    if cut:
        with newest.open("r+b") as handle:
            handle.truncate(cut[0][0])
    return len(cut)


class Store:
    """One `tidings up` on a fixed port in a private state directory, restartable."""

    def __init__(self, procs: ProcessGroup, env: dict[str, str]) -> None:
        self.procs, self.env = procs, env
        self.state = Path(env["TIDINGS_STATE_DIR"])
        self.port = str(free_port())
        self.up: TidingsProcess = self.start()

    def start(self) -> TidingsProcess:
        self.up = self.procs.start("up", "--port", self.port)
        self.up.wait_ready(timeout=READY_SECONDS)
        return self.up

    def engine(self) -> int:
        return int(json.loads((self.state / "store.json").read_text())["pid"])

    def kill_all(self) -> None:
        """SIGKILL `up` and its engine; wait until neither runs."""
        engine = self.engine()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.up.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(engine, signal.SIGKILL)
        self.up.process.wait(10)
        wait_until(lambda: not engines(self.state), timeout=20, what="the engine to be gone")

    def reap(self) -> None:
        for pid in engines(self.state):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def fault_store(
    procs: ProcessGroup, env: dict[str, str], workdir: Path
) -> Iterator[tuple[Store, Any]]:
    """A started store and an agent on it whose client times out after
    :data:`CLIENT_TIMEOUT` (its failover retry budget is the shipped one)."""
    env["TIDINGS_BROKER_HEARTBEAT_MS"] = "1000"
    # A flush flag the kill left behind holds its buffer until it lapses (C15's sweep).
    env["TIDINGS_FLUSH_FLAG_TTL"] = "2"
    store = Store(procs, env)
    saved = connection.COMMAND_TIMEOUT
    connection.COMMAND_TIMEOUT = CLIENT_TIMEOUT
    settings = Settings(host=env["TIDINGS_HOST"], state_dir=store.state)
    try:
        with tidings.connect(settings=settings) as hub:
            yield store, hub.agent(workdir, max_events=dict.fromkeys(CHANNELS, RETAINED))
    finally:
        connection.COMMAND_TIMEOUT = saved
        store.reap()


def settle(agent: Any, workdir: Path, channel: str, acked: list[str]) -> Tally:
    """Count once everything buffered before now is in the file: a last event published
    with ``wait=True`` flushes after every record ahead of it (C14)."""
    last = agent.publish_event(channel, {"last": True}, wait=True)
    assert last["status"] == "ok" and last["flushed"], last
    return tally(acked, [e for e in file_ids(workdir, channel) if e != last["event_id"]])


def run_round(
    fault: str, store: Store, agent: Any, workdir: Path, round_no: int, commands: int = 0
) -> Tally:
    """Round ``round_no``: one burst into a fresh channel struck by ``fault``, counted."""
    channel = CHANNELS[round_no]
    floor = newest_aof(store.state).stat().st_size if fault == "aof_tail" else 0
    burst = Burst(agent, channel).start()
    burst.wait_acked(BEFORE_FAULT)
    if fault == "none":
        pass  # the baseline: a burst no fault strikes
    elif fault == "hang":
        engine = store.engine()
        os.kill(engine, signal.SIGSTOP)
        time.sleep(HANG_SECONDS)  # the fault itself: a stop past the client's timeout
        os.kill(engine, signal.SIGCONT)
    elif fault == "kill_engine":
        os.kill(store.engine(), signal.SIGKILL)
        time.sleep(0.3)  # in-flight publishes fail over; `up` may linger (issue 30 item 3)
        store.kill_all()
        store.start()
    elif fault == "kill_up":
        store.up.process.send_signal(signal.SIGKILL)
        store.up.process.wait(10)
        wait_until(
            lambda: not engines(store.state), timeout=20, what="the engine to stop with its parent"
        )
        store.start()
    elif fault == "aof_tail":
        store.kill_all()
        cut_aof_tail(store.state, commands, floor)
        store.start()
    else:
        raise ValueError(fault)
    burst.wait_acked(AFTER_FAULT)
    acked = burst.finish()
    return settle(agent, workdir, channel, acked)
