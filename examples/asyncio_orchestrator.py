"""An asyncio orchestrator serving 100 agents in one event loop with ``tidings.aio``.

Each agent's loop: ``startup`` once, then await a wake signal, prepare a turn (its
inbox and capped attention lane), "run the model", and finish the turn. Waiting
holds no thread, so the 100 waiting agents cost a handful of threads. A producer
publishes to a few agents; the embedded hub's scheduler turns that into wakes.

    python examples/asyncio_orchestrator.py
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
from pathlib import Path

import tidings.aio

AGENTS = 100
PRODUCED = 10


async def serve(agent: tidings.aio.AsyncAgent, turns: list[str], stop: asyncio.Event) -> None:
    await agent.startup()
    while not stop.is_set():
        signal = await agent.wait_for_wake(timeout=1)
        if signal is None:
            continue
        turn = await agent.prepare_turn()
        if not isinstance(turn, tidings.Turn):
            continue  # an error dict: e.g. another orchestrator holds the turn
        # ... call your model with turn.attention and turn.inbox_text here ...
        await agent.finish_turn(turn)
        turns.append(agent.agent_id)


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with tidings.aio.connect("embedded", background=True) as hub:
            agents = []
            for n in range(AGENTS):
                (Path(folder) / f"agent{n}").mkdir()
                agents.append(await hub.agent(Path(folder) / f"agent{n}", inline=True))
            turns: list[str] = []
            stop = asyncio.Event()
            loops = [asyncio.create_task(serve(a, turns, stop)) for a in agents]
            for agent in agents[:PRODUCED]:
                await agent.publish_event("mcp.ci", {"text": f"build for {agent.agent_id}"})
            async with asyncio.timeout(60):
                while len(set(turns)) < PRODUCED:
                    await asyncio.sleep(0.1)
            print(
                f"{len(set(turns))} agents took a turn; {threading.active_count()} threads "
                f"for {AGENTS} waiting agents"
            )
            stop.set()
            await asyncio.gather(*loops)


if __name__ == "__main__":
    asyncio.run(main())
