"""Issue 24 (interfaces.md "Local trust"), MCP over HTTP in process: the bearer token, where a
generated one is kept, bounded bodies and the loopback-only host. The real process is
in tests/e2e/test_mcp_stdio.py."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tidings.errors import TidingsError
from tidings.mcp import token as mcp_token
from tidings.mcp.server import AgentServer
from tidings.web.body_limit import MAX_BODY_BYTES

TOKEN = "mcp-t0ken-for-tests"
BASE = "http://127.0.0.1:8765"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def web() -> Iterator[TestClient]:
    app = AgentServer(agent=None).http_app(TOKEN)  # type: ignore[arg-type]
    with TestClient(app, base_url=BASE) as client:  # runs the session manager's lifespan
        yield client


def bearer(value: str = TOKEN) -> dict[str, str]:
    return {**MCP_HEADERS, "Authorization": f"Bearer {value}"}


def test_initialize_needs_the_bearer_token(web: TestClient) -> None:
    assert web.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS).status_code == 401
    assert web.post("/mcp", json=INITIALIZE, headers=bearer("wrong")).status_code == 401
    answer = web.post("/mcp", json=INITIALIZE, headers=bearer())
    assert answer.status_code == 200, answer.text


def test_host_and_origin_are_still_checked(web: TestClient) -> None:
    foreign = {**bearer(), "Origin": "http://evil.example"}
    assert web.post("/mcp", json=INITIALIZE, headers=foreign).status_code == 403
    rebound = {**bearer(), "Host": "evil.example"}
    assert web.post("/mcp", json=INITIALIZE, headers=rebound).status_code in (400, 421)


def test_bodies_past_64_kib_get_413(web: TestClient) -> None:
    padded = b'{"jsonrpc": "2.0", "pad": "' + b"x" * MAX_BODY_BYTES + b'"}'
    assert web.post("/mcp", content=padded, headers=bearer()).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: the stream is counted
        yield b'{"pad": "'
        for _ in range(16):
            yield b"x" * 16384

    assert web.post("/mcp", content=chunks(), headers=bearer()).status_code == 413


@pytest.mark.parametrize("host", ["0.0.0.0", "10.0.0.5", "::", "127.0.0.2", "example.com"])
def test_serve_http_refuses_a_non_loopback_host(host: str) -> None:
    server = AgentServer(agent=None)  # type: ignore[arg-type]
    with pytest.raises(TidingsError) as refused:
        asyncio.run(server.serve_http(0, host, token=TOKEN))
    assert refused.value.reason == "not_loopback"
    assert "loopback" in refused.value.message and host in refused.value.message


# -- where the token comes from ---------------------------------------------------------------


def test_env_token_wins_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDINGS_MCP_TOKEN", "from-env")
    assert mcp_token.http_token(tmp_path / "state") == ("from-env", "env")
    assert not (tmp_path / "state").exists()


def test_generated_token_is_kept_0600_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TIDINGS_MCP_TOKEN", raising=False)
    state = tmp_path / "state"
    token, source = mcp_token.http_token(state)
    kept = state / mcp_token.TOKEN_FILE
    assert source == "generated" and len(token) >= 32
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert kept.read_text().strip() == token
    assert mcp_token.http_token(state) == (token, "kept")


@pytest.mark.parametrize("spoil", ["widened", "symlink", "garbage", "fifo"])
def test_a_kept_token_that_is_no_longer_private_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spoil: str
) -> None:
    monkeypatch.delenv("TIDINGS_MCP_TOKEN", raising=False)
    state = tmp_path / "state"
    old, _ = mcp_token.http_token(state)
    kept = state / mcp_token.TOKEN_FILE
    elsewhere = tmp_path / "elsewhere"
    if spoil == "widened":
        kept.chmod(0o644)
    elif spoil == "symlink":
        elsewhere.write_text(old)
        elsewhere.chmod(0o600)
        kept.unlink()
        kept.symlink_to(elsewhere)
    elif spoil == "garbage":
        kept.write_text("short")
    else:
        kept.unlink()
        os.mkfifo(kept, 0o600)
    token, source = mcp_token.http_token(state)
    assert source == "generated" and token != old
    assert not kept.is_symlink() and stat.S_IMODE(kept.stat().st_mode) == 0o600
    if spoil == "symlink":
        assert elsewhere.read_text() == old  # the link's target was never written


def test_static_token_verifier() -> None:
    verifier = mcp_token.StaticToken(TOKEN)
    found: Any = asyncio.run(verifier.verify_token(TOKEN))
    assert found is not None and found.client_id == mcp_token.CLIENT_ID
    assert asyncio.run(verifier.verify_token("nope")) is None


def test_an_unusable_state_dir_is_one_usage_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tidings.cli._common import UsageError
    from tidings.cli.mcp import announced_token

    monkeypatch.delenv("TIDINGS_MCP_TOKEN", raising=False)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(UsageError, match="TIDINGS_MCP_TOKEN"):
        announced_token(blocker / "state")
