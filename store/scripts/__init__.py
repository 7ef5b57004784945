"""The Lua scripts: every ``store/lua/<name>.lua`` run through one :class:`Scripts` runner.

Multi-key changes happen only in these scripts, and every key a script touches is
passed in ``KEYS`` (so they work unchanged on a Redis Cluster, one agent per slot).
Callers use the typed wrappers in this package's modules (named arguments in, a
parsed result out, keys from the agent's hash-tagged key helpers), not the runner.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import TypeVar

from redis import Redis
from redis.asyncio import Redis as AsyncRedis
from redis.commands.core import AsyncScript, Script

from tidings.store import replies

#: A value passed in ``ARGV`` (Redis turns each into a string).
Arg = str | bytes | int | float
#: Shared Lua put in front of a script's own source: script name → prelude files
#: (``store/lua/prelude_<name>.lua``), so one piece of Lua has one copy.
PRELUDES: dict[str, tuple[str, ...]] = {
    "inbox_finish": ("retention",),
    "inbox_ignore": ("retention",),
}

_Outcome = TypeVar("_Outcome", bound=str)


def _read(file: str) -> str:
    package = (__package__ or "tidings.store.scripts").rpartition(".")[0]
    return resources.files(package).joinpath("lua", f"{file}.lua").read_text("utf-8")


@cache
def source(name: str) -> str:
    """The Lua a script runs: its preludes, then its own file."""
    parts = [_read(f"prelude_{prelude}") for prelude in PRELUDES.get(name, ())]
    return "\n".join([*parts, _read(name)])


class ScriptReplyError(ValueError):
    """A script answered in a shape its wrapper does not know (a bug, not bad input)."""


def parts(name: str, reply: object) -> list[str]:
    """A script's flat list reply, each element as text."""
    if not isinstance(reply, list) or not reply:
        raise ScriptReplyError(f"{name} answered {reply!r}, not a non-empty list")
    return [replies.text(part) for part in reply]


def outcome(name: str, reply: list[str], known: tuple[_Outcome, ...]) -> _Outcome:
    """The reply's first element, one of the ``known`` outcomes of the script."""
    for value in known:
        if reply[0] == value:
            return value
    raise ScriptReplyError(f"{name} answered {reply}, not one of {known}")


def number(name: str, reply: object) -> int:
    """A script's integer reply."""
    if isinstance(reply, bool) or not isinstance(reply, int):
        raise ScriptReplyError(f"{name} answered {reply!r}, not an integer")
    return reply


class Scripts:
    """Scripts bound to one client; redis-py handles EVALSHA and reloading."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        self._bound: dict[str, Script] = {}

    def __call__(self, name: str, keys: Sequence[str], args: Sequence[Arg]) -> object:
        script = self._bound.get(name)
        if script is None:
            script = self._bound[name] = self._redis.register_script(source(name))
        return script(keys=list(keys), args=list(args))


class AsyncScripts:
    """:class:`Scripts` on a ``redis.asyncio`` client (``tidings.aio``)."""

    def __init__(self, redis: AsyncRedis) -> None:
        self._redis = redis
        self._bound: dict[str, AsyncScript] = {}

    async def __call__(self, name: str, keys: Sequence[str], args: Sequence[Arg]) -> object:
        script = self._bound.get(name)
        if script is None:
            script = self._bound[name] = self._redis.register_script(source(name))
        return await script(keys=list(keys), args=list(args))
