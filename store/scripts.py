"""The Lua script registry: every ``store/lua/<name>.lua`` as a redis-py Script.

Multi-key changes happen only in these scripts, and every key a script touches is
passed in ``KEYS`` (so they work unchanged on a Redis Cluster, one agent per slot).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from redis import Redis


@cache
def source(name: str) -> str:
    lua = resources.files(__package__ or "tidings.store").joinpath("lua", f"{name}.lua")
    return lua.read_text("utf-8")


class Scripts:
    """Scripts bound to one client; redis-py handles EVALSHA and reloading."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        self._bound: dict[str, Any] = {}

    def __call__(self, name: str, keys: list[str], args: list[Any]) -> Any:
        script = self._bound.get(name)
        if script is None:
            script = self._bound[name] = self._redis.register_script(source(name))
        return script(keys=keys, args=args)
