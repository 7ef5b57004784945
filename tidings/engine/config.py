"""The engine's generated configuration (interfaces.md "The default store", Configuration)."""

from __future__ import annotations

import os
import secrets

from tidings.engine.state_paths import StatePaths
from tidings.engine.storefile import SECRET_MODE, write_private

#: Random bytes of the generated password (hex-encoded, so twice as many characters).
PASSWORD_BYTES = 32
#: Loopback only: the engine is never reachable from another machine.
BIND = "127.0.0.1"


def password(paths: StatePaths) -> str:
    """The store's password: generated once, kept in ``store/password`` (0600)."""
    try:
        fd = os.open(
            paths.password, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, SECRET_MODE
        )
    except FileExistsError:
        fd = os.open(paths.password, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            kept = os.read(fd, 4096).decode("ascii", "replace").strip()
        finally:
            os.close(fd)
        if len(kept) >= PASSWORD_BYTES:
            return kept
        # Empty or cut short (a crash between create and write): make a new one.
        paths.password.unlink()
        return password(paths)
    try:
        value = secrets.token_hex(PASSWORD_BYTES)
        os.write(fd, value.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    return value


def render(paths: StatePaths, port: int, secret: str, fsync: str) -> str:
    """The configuration text: AOF on, data and files in the state directory, loopback
    plus a unix socket, the password, protected mode, in the foreground."""
    lines = [
        "daemonize no",
        "supervised no",
        f"bind {BIND}",
        f"port {port}",
        "protected-mode yes",
        f'requirepass "{secret}"',
        f'dir "{paths.data_dir}"',
        "appendonly yes",
        f"appendfsync {fsync}",
        # The AOF is the durability; no RDB snapshots beside it (its rewrites keep an
        # RDB preamble, so a restart loads fast).
        'save ""',
        f'pidfile "{paths.pid_file}"',
        f'logfile "{paths.log}"',
    ]
    if paths.socket is not None:
        lines += [f'unixsocket "{paths.socket}"', "unixsocketperm 700"]
    return "\n".join(lines) + "\n"


def write(paths: StatePaths, text: str) -> None:
    """Write the configuration (it holds the password), 0600."""
    write_private(paths.config, text.encode())
