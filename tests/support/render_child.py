"""Renders of one workdir from forked processes, released together (block-cap.md B9).

Each child builds a runtime on its own fakeredis (the spill logic is file-based),
waits for the shared start event, renders the agent's attention lane and sends
it back. Variant ``b`` renders with a persistent block that points ``mcp.big1``
elsewhere (B4), which makes a second, different oversized lane.
"""

from __future__ import annotations

import multiprocessing
import os
from typing import Any

import fakeredis

from tests.support.dispatch import InlineJobs
from tidings.jobs.consumer import delivery
from tidings.jobs.runtime import Runtime
from tidings.store.clock import SystemClock
from tidings.store.models import AgentRecord
from tidings.store.settings import Settings

#: The persistent block of variant ``b``.
VARIANT_B = {"mcp": {"big1": {"messages": [{"id": "m1"}]}}}
START_TIMEOUT = 30.0
_FORK = multiprocessing.get_context("fork")


def _render(workdir: str, variant: str, start: Any, results: Any) -> None:
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer(), version=(7,))
    rt = Runtime(client, SystemClock(), Settings(host="child", redis_url=None), InlineJobs())
    agent = AgentRecord(agent_id="a1", workdir=os.path.realpath(workdir), host="child")
    if not start.wait(START_TIMEOUT):
        raise SystemExit("no start signal")
    notes = delivery.render(rt, agent, VARIANT_B if variant == "b" else None)
    results.put((variant, notes["attention"]))
    client.close()


def render_together(workdir: str, variants: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """One forked process per variant, started at once; their ``(variant, lane)`` pairs."""
    start = _FORK.Event()
    results = _FORK.Queue()
    children = [_FORK.Process(target=_render, args=(workdir, v, start, results)) for v in variants]
    try:
        for child in children:
            child.start()
        start.set()
        out = [results.get(timeout=START_TIMEOUT) for _ in children]
        for child in children:
            child.join(START_TIMEOUT)
            assert child.exitcode == 0
        return out
    finally:
        for child in children:
            if child.is_alive():
                child.kill()
                child.join()
        results.close()
        results.join_thread()
