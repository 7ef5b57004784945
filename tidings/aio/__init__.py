"""tidings for asyncio: every :class:`tidings.Hub` and :class:`tidings.Agent` method as a
coroutine, with the same names, arguments and results (interfaces.md, Plugging into agent
frameworks). Waiting holds no thread.

    >>> import tidings.aio
    >>> async with tidings.aio.connect("embedded") as hub:
    ...     agent = await hub.agent(workdir)
    ...     signal = await agent.wait_for_wake(30)
"""

from tidings.aio._agent import AsyncAgent
from tidings.aio._hub import AsyncHub, Connecting, connect

__all__ = ["AsyncAgent", "AsyncHub", "Connecting", "connect"]
