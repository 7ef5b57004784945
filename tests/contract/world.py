"""The world a contract scenario runs in: one store, one agent, a clock the test moves.

Every path under test opens its own client on the same store (as a separate process
would) and shares the :class:`StepClock`, so a scenario can put a delay's deadline
behind it in no time while workers and waits still run in real time.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from redis.exceptions import NoPermissionError

from tests.support.memory_repo import MemoryRepo
from tidings._agent import Agent
from tidings._hub import Hub
from tidings.jobs.consumer import coherent, delay_alarm
from tidings.jobs.consumer.delivery import check_placeholder
from tidings.jobs.consumer.read import Observation
from tidings.jobs.consumer.visit import sync_agent
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord
from tidings.store.settings import Settings

#: Where the clock starts (Unix seconds).
START = 1_790_000_000.0
#: The memory repository's files before the agent's first observation.
MEMORY_FILES = {"MEMORY.md": "remember\n", "notes/plan.md": "p\n"}


class StepClock:
    """Wall time that moves only when told (``advance``); ``monotonic`` and ``sleep`` are
    real, so a publish waiting for a worker's flush waits as it would in production."""

    def __init__(self, start: float = START) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@contextlib.contextmanager
def unreadable(how: str) -> Iterator[None]:
    """Every coherent read of this process fails (``refused``: the store answers NOPERM,
    as it does to the monitor role) or stays unstable (``unstable``: every attempt's
    bookends differ), for whichever path reads (channels.md C24)."""
    with pytest.MonkeyPatch.context() as patch:
        if how == "refused":

            def refuse(*args: Any) -> None:
                raise NoPermissionError("this user has no permissions to run the 'get' command")

            patch.setattr(delay_alarm, "reconcile", refuse)
        else:
            patch.setattr(
                coherent,
                "bare_read",
                lambda *a, **k: Observation(
                    False, [["soul.json", 1, "x"]], [], {"soul": {"header": "half"}}, attempts=3
                ),
            )
        yield


class World:
    """One agent with a memory repository on ``store``; ``producer`` is an inline agent
    that stands for the outside producers and the orchestrator's own calls."""

    def __init__(
        self,
        new_client: Callable[[], Any],
        tmp_path: Path,
        *,
        memory: bool = True,
        new_control: Callable[[], Any] | None = None,
    ) -> None:
        self.new_client = new_client
        #: Clients of a control store of its own (a cluster's broker), else ``None``.
        self.new_control = new_control
        self.clock = StepClock()
        # The world decides when the agent is visited (its tick), so that a scenario can
        # count the wakes a tick gives; prompt visits racing the tick are the subject of
        # tests/unit/test_prompt_races.py and tests/e2e/test_prompt_wake.py (issue 33).
        self.settings = Settings(
            host=f"contract-{uuid.uuid4().hex[:8]}", redis_url=None, prompt_visits=False
        )
        self.workdir = tmp_path / "workdir"
        self.workdir.mkdir()
        self.hub = self.open_hub()
        # A memory repository costs a git init and an observation: only where it is used.
        repo = MemoryRepo(tmp_path / "memory", MEMORY_FILES) if memory else None
        self.producer: Agent = self.hub.agent(
            self.workdir, memory_repo=repo.root if repo else None, inline=True
        )
        self.record: AgentRecord = self.producer.record
        if repo is not None:
            assert self.producer.startup()["memory"]["status"] == "baseline"
        self._memory = repo

    @property
    def memory(self) -> MemoryRepo:
        assert self._memory is not None, "this world was made without a memory repository"
        return self._memory

    def clients(self) -> dict[str, Any]:
        """``connect()``'s client arguments: new clients of the world's store(s)."""
        control = self.new_control() if self.new_control is not None else None
        return {"client": self.new_client(), "broker_client": control}

    def open_hub(self, *, declare_actors: bool = True) -> Hub:
        """A hub of its own clients on the world's store(s) and clock."""
        clients = self.clients()
        return Hub(
            clients["client"],
            self.settings,
            clock=self.clock,
            url="client",
            owns_client=True,
            declare_actors=declare_actors,
            control=clients["broker_client"],
        )

    def close(self) -> None:
        self.hub.close()

    # -- what the scenarios look at ------------------------------------------------

    def tick(self) -> dict[str, Any]:
        """One sync tick for the agent (channels.md C27), as the scheduler runs it."""
        return sync_agent(self.hub.runtime, self.record)

    def wakes(self) -> int:
        return int(self.hub.redis.xlen(AgentKeys(self.record.agent_id).wake_stream))

    def file(self, rel: str) -> bytes | None:
        path = self.workdir / rel
        return path.read_bytes() if path.exists() else None

    def channel(self, name: str) -> Any:
        data = self.file(f".notification/{name}.json")
        return json.loads(data) if data is not None else None

    def delay_status(self) -> str | None:
        data = self.file(".notification/.delay_state.json")
        return json.loads(data)["status"] if data is not None else None

    def deliver(self) -> dict[str, Any]:
        """A delivery by the orchestrator (the stamped check, C24)."""
        return self.producer.stamp(check_placeholder())
