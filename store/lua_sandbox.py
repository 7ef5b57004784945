"""Lua without the host's powers on the in-memory store (fakeredis), as in a real server.

fakeredis runs ``EVAL`` and ``FUNCTION`` code in lupa's default runtime: the whole Lua
standard library plus lupa's bridge to Python, so any client of the in-memory store could
run programs as the user of ``tidings up`` (issue 24; interfaces.md "Local trust"). A real server
gives scripts neither.

A sandbox, not a list of accepted script SHAs: the store runs tidings' own scripts
(``store/lua``), dramatiq's broker scripts and redis-py's, and an allowlist would have to
track every library's script text across upgrades and would refuse the ad-hoc ``EVAL`` a
real server runs. The sandbox gives every script exactly what a real server gives.

fakeredis offers no hook for its runtime's options: both its ``EVAL`` runtime and its
``FUNCTION`` engine are built by ``fakeredis.commands_mixins.scripting_mixin.LUA_MODULE
.LuaRuntime(...)``. :func:`install` points that module name at :class:`SandboxedLua`, whose
``LuaRuntime`` is lupa's with ``register_eval=False``, ``register_builtins=False`` and an
attribute filter that refuses every attribute of a Python object (fakeredis's callbacks are
only called from Lua, never inspected; a refusal is a script error), and removes
:data:`REMOVED_GLOBALS`. ``FUNCTION`` is refused on the in-memory store: fakeredis's engine
needs ``debug`` and ``loadstring`` to build its library sandbox, and code it loads with
``loadstring`` would see the whole global table; tidings does not use functions (the
shipped ACLs deny them too). The fakeredis range is pinned in ``pyproject.toml``;
:func:`install` raises if the name is not where it expects, and
``tests/unit/test_lua_sandbox.py`` checks the result.
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType
from typing import Any, NoReturn

#: Globals a real server's scripts do not have: the operating system, files, modules,
#: loading code, the debug library and lupa's Python bridge.
REMOVED_GLOBALS = (
    "os",
    "io",
    "package",
    "require",
    "module",
    "load",
    "loadstring",
    "loadfile",
    "dofile",
    "debug",
    "python",
    "print",
)

#: The module that builds fakeredis's ``FUNCTION`` engine.
FUNCTIONS_MODULE = "fakeredis.commands_mixins._lua_functions"
#: The error a ``FUNCTION`` command answers.
NO_FUNCTIONS = "ERR FUNCTION is not available on the in-memory store (tidings uses none)"

_STRIP = "\n".join(f"{name} = nil" for name in REMOVED_GLOBALS)
_lock = threading.Lock()


class SandboxedLua:
    """Stands in for the lupa module fakeredis uses; only ``LuaRuntime`` differs."""

    def __init__(self, lua_module: ModuleType) -> None:
        self._lua = lua_module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lua, name)

    def _no_attributes(self, obj: object, name: object, is_setting: bool) -> NoReturn:
        # A Lua error, which fakeredis answers as a failed script; any other exception
        # would escape the command.
        raise self._lua.LuaError("Python objects have no attributes in scripts")

    def LuaRuntime(self, **options: Any) -> Any:
        if sys._getframe(1).f_globals.get("__name__") == FUNCTIONS_MODULE:
            from fakeredis._helpers import SimpleError  # noqa: PLC0415 - an error reply

            raise SimpleError(NO_FUNCTIONS)
        runtime = self._lua.LuaRuntime(
            **options,
            register_eval=False,
            register_builtins=False,
            attribute_filter=self._no_attributes,
        )
        runtime.execute(_STRIP)
        return runtime


def install() -> None:
    """Sandbox every fakeredis Lua runtime built from now on in this process (idempotent)."""
    from fakeredis.commands_mixins import scripting_mixin  # noqa: PLC0415 - in-memory store only

    with _lock:
        current = getattr(scripting_mixin, "LUA_MODULE", None)
        if isinstance(current, SandboxedLua):
            return
        if not isinstance(current, ModuleType) or not hasattr(current, "LuaRuntime"):
            raise RuntimeError(
                "fakeredis changed how it builds Lua runtimes; the in-memory "
                "store cannot sandbox scripts (check the pinned fakeredis range)"
            )
        setattr(scripting_mixin, "LUA_MODULE", SandboxedLua(current))  # noqa: B010 - a module
