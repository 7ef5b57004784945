"""tidings: keeps long-running LLM agents informed.

    >>> import tidings
    >>> hub = tidings.connect("embedded", background=True)
    >>> agent = hub.agent("/path/to/workdir", inline=True)
    >>> agent.publish_event("system", {"text": "hi"})
    {'status': 'ok', 'event_id': 'evt_...', 'flushed': True}
"""

from tidings._agent import Agent
from tidings._hub import Hub, connect
from tidings._tool_dialects import notification_tool_schema
from tidings._turn import Turn
from tidings.errors import (
    LockTimeout,
    NoStoreError,
    StoreError,
    TidingsError,
    UnknownAgentError,
    UnsafePathError,
)
from tidings.store.clock import Clock, FakeClock, SystemClock
from tidings.store.settings import RedisConfig, Settings

__all__ = [
    "Agent",
    "Clock",
    "FakeClock",
    "Hub",
    "LockTimeout",
    "NoStoreError",
    "RedisConfig",
    "Settings",
    "StoreError",
    "SystemClock",
    "TidingsError",
    "Turn",
    "UnknownAgentError",
    "UnsafePathError",
    "connect",
    "notification_tool_schema",
]
