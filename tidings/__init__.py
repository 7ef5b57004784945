"""tidings: keeps long-running LLM agents informed.

    >>> import tidings
    >>> hub = tidings.connect("embedded")
    >>> agent = hub.agent("/path/to/workdir", inline=True)
    >>> agent.publish_event("system", {"text": "hi"})
    {'status': 'ok', 'event_id': 'evt_...', 'flushed': True}

The public names load on first use (PEP 562), so ``import tidings.cli`` and the
hook-sized commands (``tidings publish``) do not pay for the worker, the
scheduler and pygit2 they never touch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

    #: The installed distribution's version (looked up on first use).
    __version__: str

#: Where each public name lives.
_EXPORTS = {
    "Agent": "tidings._agent",
    "Clock": "tidings.store.clock",
    "FakeClock": "tidings.store.clock",
    "Hub": "tidings._hub",
    "LockTimeout": "tidings.errors",
    "NoStoreError": "tidings.errors",
    "RedisConfig": "tidings.store.settings",
    "Settings": "tidings.store.settings",
    "StoreError": "tidings.errors",
    "SystemClock": "tidings.store.clock",
    "TidingsError": "tidings.errors",
    "Turn": "tidings._turn",
    "UnknownAgentError": "tidings.errors",
    "UnsafePathError": "tidings.errors",
    "connect": "tidings._hub",
    "notification_tool_schema": "tidings._tool_dialects",
}

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


def _version() -> str:
    """The installed distribution's version (importlib.metadata costs ~40 ms: on use only)."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("tidings")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> object:
    if name == "__version__":
        value: object = _version()
        globals()[name] = value
        return value
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tidings' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
