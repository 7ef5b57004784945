"""Where the default store keeps its files inside ``TIDINGS_STATE_DIR``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tidings.engine.storefile import STORE_FILE

#: Longest unix socket path the kernel takes (``sun_path`` holds 108 bytes with its NUL).
MAX_SOCKET_PATH = 107
#: Folders tidings creates hold agent state: owner only.
PRIVATE_DIR_MODE = 0o700


@dataclass(frozen=True)
class StatePaths:
    """Every file of one state directory."""

    root: Path

    @property
    def store_file(self) -> Path:
        """``store.json``: what clients read (0600)."""
        return self.root / STORE_FILE

    @property
    def owner_lock(self) -> Path:
        """Held by the one ``tidings up`` of this directory for its whole life."""
        return self.root / "owner.lock"

    @property
    def store_dir(self) -> Path:
        """The engine's generated configuration, password, pid file, log and lock."""
        return self.root / "store"

    @property
    def data_dir(self) -> Path:
        """The engine's ``dir``: its append-only file."""
        return self.store_dir / "data"

    @property
    def server_lock(self) -> Path:
        """Held by the engine process itself (an inherited descriptor) for its whole life."""
        return self.store_dir / "server.lock"

    @property
    def marker(self) -> Path:
        """The id of the data the engine keeps (its twin is a key in that data)."""
        return self.store_dir / "store-id"

    @property
    def config(self) -> Path:
        return self.store_dir / "engine.conf"

    @property
    def password(self) -> Path:
        return self.store_dir / "password"

    @property
    def pid_file(self) -> Path:
        return self.store_dir / "engine.pid"

    @property
    def log(self) -> Path:
        return self.store_dir / "engine.log"

    @property
    def socket(self) -> Path | None:
        """The engine's unix socket, or ``None`` when the path is too long for one."""
        path = self.root / "store.sock"
        return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None

    def create(self) -> None:
        """Make the folders, owner-only."""
        for folder in (self.root, self.store_dir, self.data_dir):
            folder.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
