"""The bearer token of ``tidings mcp --transport http`` (interfaces.md "Local trust").

``TIDINGS_MCP_TOKEN`` if set; else the token kept in ``TIDINGS_STATE_DIR/mcp-token``
(mode 0600), made on first use. A kept token is reused across restarts because MCP
clients keep it in their configuration (an agent framework's server entry) and a new
one per restart would break every configured client; it is reused only while it is
still private: a regular file of this user, no group or other bits, a token's shape.
Anything else there is replaced (never followed). Delete the file to rotate the token.
"""

from __future__ import annotations

import hmac
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mcp.server.auth.provider import AccessToken

TOKEN_ENV = "TIDINGS_MCP_TOKEN"
#: The file in the state directory that keeps a generated token.
TOKEN_FILE = "mcp-token"
#: What a kept token looks like (``secrets.token_urlsafe(32)`` makes 43 characters).
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{32,128}")
#: The client id every request carrying the token is known by.
CLIENT_ID = "tidings-mcp"

Source = Literal["env", "kept", "generated"]


def _kept(directory: Path) -> str | None:
    """The kept token, if the file is still private and well formed."""
    try:
        fd = os.open(
            directory / TOKEN_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        )
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        text = os.read(fd, 256).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    return text if TOKEN_SHAPE.fullmatch(text) else None


def _keep(directory: Path, token: str) -> None:
    """Write the token 0600: temp file + fsync + ``os.replace`` (a link there is replaced)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    temp = directory / f".{TOKEN_FILE}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, f"{token}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(temp, directory / TOKEN_FILE)
    except OSError:
        temp.unlink(missing_ok=True)
        raise


def http_token(directory: Path) -> tuple[str, Source]:
    """The token in force and where it came from; ``directory`` is the state directory
    (``Settings.state_dir``: ``TIDINGS_STATE_DIR``, else the XDG default)."""
    given = os.environ.get(TOKEN_ENV)
    if given:
        return given, "env"
    kept = _kept(directory)
    if kept is not None:
        return kept, "kept"
    token = secrets.token_urlsafe(32)
    _keep(directory, token)
    return token, "generated"


@dataclass(frozen=True)
class StaticToken:
    """The SDK's ``TokenVerifier`` for one shared bearer token."""

    token: str

    async def verify_token(self, token: str) -> AccessToken | None:
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            return None
        return AccessToken(token=token, client_id=CLIENT_ID, scopes=[])
