"""Issue 24 (interfaces.md "Local trust"), the console in process: spills through the no-follow
walk, sessions, logout, the login throttle, the Origin check, the Secure cookie, bounded
bodies. The real processes are in tests/e2e/test_web_cli.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from starlette.testclient import TestClient

import tidings
from tidings._hub import Hub
from tidings.jobs.cap import ATTENTION_STEM
from tidings.store.clock import FakeClock
from tidings.web import sessions
from tidings.web.app import build_app
from tidings.web.auth import COOKIE
from tidings.web.body_limit import MAX_BODY_BYTES
from tidings.web.serve import console_token

LOCAL = "http://127.0.0.1"
TOKEN = "t0ken-for-tests"
SPILL = f"{ATTENTION_STEM}1700000000-0123abcd.json"


@pytest.fixture
def hub() -> Iterator[Hub]:
    store = fakeredis.FakeRedis(server=fakeredis.FakeServer(), version=(7,))
    with tidings.connect(client=store, clock=FakeClock()) as h:
        yield h


@pytest.fixture
def workdir(hub: Hub, tmp_path: Path) -> Path:
    root = tmp_path / "w"
    root.mkdir()
    hub.agent(root, agent_id="a1", inline=True)
    return root


def signed_in(web: TestClient) -> None:
    assert web.get(f"/login?token={TOKEN}", follow_redirects=False).status_code == 303


# -- acceptance 2: spills -------------------------------------------------------------------


def test_spill_route_serves_a_plain_spill_and_nothing_through_a_link(
    hub: Hub, workdir: Path, tmp_path: Path
) -> None:
    """Acceptance 2: 200 for a plain spill; 404 for a spill name that is a symlink and for
    ``logs/`` symlinked out of the workdir (the file there is never served)."""
    logs = workdir / "logs"
    logs.mkdir()
    (logs / SPILL).write_text('{"spilled": true}')
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / SPILL).write_text("SECRET outside the workdir")
    (outside / "target.json").write_text("SECRET target")
    linked = f"{ATTENTION_STEM}1700000001-0123abcd.json"
    (logs / linked).symlink_to(outside / "target.json")
    fifo = f"{ATTENTION_STEM}1700000002-0123abcd.json"
    os.mkfifo(logs / fifo)
    with TestClient(build_app(hub), base_url=LOCAL) as web:
        plain = web.get(f"/agents/a1/spill/{SPILL}")
        assert plain.status_code == 200 and plain.text == '{"spilled": true}'
        assert plain.headers["content-type"].startswith("text/plain")
        assert web.get(f"/agents/a1/spill/{linked}").status_code == 404
        assert web.get(f"/agents/a1/spill/{fifo}").status_code == 404  # never blocks
        (logs / SPILL).unlink()
        (logs / linked).unlink()
        (logs / fifo).unlink()
        logs.rmdir()
        logs.symlink_to(outside)
        through = web.get(f"/agents/a1/spill/{SPILL}")
        assert through.status_code == 404 and "SECRET" not in through.text


def test_a_spill_flipping_between_file_and_link_never_serves_the_link(
    hub: Hub, workdir: Path, tmp_path: Path
) -> None:
    """The race the issue won 8 times in 400 (check, then open by path): the open itself
    refuses the link, so no answer ever carries the link's target."""
    import threading

    logs = workdir / "logs"
    logs.mkdir()
    secret = tmp_path / "secret.json"
    secret.write_text("SECRET")
    spill, staged_file, staged_link = logs / SPILL, logs / "file.tmp", logs / "link.tmp"
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            staged_file.write_text('{"plain": 1}')
            os.replace(staged_file, spill)
            staged_link.symlink_to(secret)
            os.replace(staged_link, spill)

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    try:
        with TestClient(build_app(hub), base_url=LOCAL) as web:
            answers = [web.get(f"/agents/a1/spill/{SPILL}") for _ in range(300)]
    finally:
        stop.set()
        flipper.join(5)
    assert not [a for a in answers if "SECRET" in a.text]
    assert {a.status_code for a in answers} <= {200, 404}


def test_spill_past_the_cap_is_404(
    hub: Hub, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tidings.web import pages

    monkeypatch.setattr(pages, "MAX_SPILL_BYTES", 8)
    (workdir / "logs").mkdir()
    (workdir / "logs" / SPILL).write_text("0123456789")
    with TestClient(build_app(hub), base_url=LOCAL) as web:
        assert web.get(f"/agents/a1/spill/{SPILL}").status_code == 404


# -- the token, sessions and logout -----------------------------------------------------------


def test_actions_on_loopback_get_a_generated_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIDINGS_WEB_TOKEN", raising=False)
    assert console_token("127.0.0.1", allow_actions=False) == (None, False)
    token, generated = console_token("127.0.0.1", allow_actions=True)
    assert generated and token is not None and len(token) >= 32
    monkeypatch.setenv("TIDINGS_WEB_TOKEN", "given")
    assert console_token("127.0.0.1", allow_actions=True) == ("given", False)


def test_with_a_token_every_route_but_login_and_static_needs_it(hub: Hub, workdir: Path) -> None:
    with TestClient(build_app(hub, allow_actions=True, token=TOKEN), base_url=LOCAL) as web:
        for path in (
            "/",
            "/agents",
            "/agents/a1",
            "/dead",
            "/api/status",
            f"/agents/a1/spill/{SPILL}",
        ):
            assert web.get(path).status_code == 401, path
        assert web.get("/login").status_code == 200
        assert web.get("/static/console.css").status_code == 200
        assert web.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        signed_in(web)
        assert web.get("/").status_code == 200
        assert "Sign out" in web.get("/").text


def test_session_cookie_flags_and_secure_only_off_loopback(hub: Hub) -> None:
    with TestClient(build_app(hub, token=TOKEN), base_url=LOCAL) as web:
        cookie = web.get(f"/login?token={TOKEN}", follow_redirects=False).headers["set-cookie"]
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    assert "secure" not in cookie.lower()
    assert TOKEN not in cookie  # a session id, never the token
    with TestClient(
        build_app(hub, token=TOKEN, loopback=False), base_url="https://10.0.0.5"
    ) as web:
        cookie = web.get(f"/login?token={TOKEN}", follow_redirects=False).headers["set-cookie"]
    assert "; secure" in cookie.lower()


def test_logout_ends_the_session_on_the_server(hub: Hub) -> None:
    with TestClient(build_app(hub, token=TOKEN), base_url=LOCAL) as web:
        signed_in(web)
        session = web.cookies[COOKIE]
        out = web.post("/logout", follow_redirects=False)
        assert out.status_code == 303 and out.headers["location"] == "/login"
        assert web.get("/").status_code == 401
        web.cookies.set(COOKIE, session)  # the old cookie, kept by a client, is dead
        assert web.get("/").status_code == 401


def test_sessions_expire_server_side() -> None:
    now = [0.0]
    store = sessions.Sessions(clock=lambda: now[0], lifetime=10)
    session = store.start()
    assert store.valid(session)
    now[0] = 10.5
    assert not store.valid(session)


def test_login_slows_down_after_ten_failures_a_minute(hub: Hub) -> None:
    now = [1000.0]
    app = build_app(hub, token=TOKEN)
    app.state.console.guard.throttle.clock = lambda: now[0]
    with TestClient(app, base_url=LOCAL) as web:
        for _ in range(sessions.MAX_FAILURES):
            assert web.post("/login", data={"token": "wrong"}).status_code == 401
        refused = web.post("/login", data={"token": TOKEN})  # even the right one, for now
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
        assert web.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 429
        now[0] += sessions.FAILURE_WINDOW_SECONDS + 1
        assert web.post("/login", data={"token": TOKEN}, follow_redirects=False).status_code == 303


def test_wrong_bearer_tokens_count_as_failures(hub: Hub) -> None:
    with TestClient(build_app(hub, token=TOKEN), base_url=LOCAL) as web:
        for _ in range(sessions.MAX_FAILURES):
            assert web.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert web.get(f"/login?token={TOKEN}").status_code == 429


# -- the Origin check -------------------------------------------------------------------------


def test_action_posts_check_origin_as_well_as_the_form_key(hub: Hub, workdir: Path) -> None:
    agent = hub.agent(workdir, agent_id="a1", inline=True)
    event_id = agent.admit("ticket", "to ignore")["event_id"]
    path = f"/agents/a1/inbox/{event_id}/ignore"
    app = build_app(hub, allow_actions=True, token=TOKEN)
    form = {"form_key": app.state.console.form_key}
    with TestClient(app, base_url=LOCAL) as web:
        signed_in(web)
        for foreign in (
            {"Origin": "http://evil.example"},
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site"},
            {"Sec-Fetch-Site": "cross-site", "Origin": LOCAL},
        ):
            assert web.post(path, data=form, headers=foreign).status_code == 403, foreign
            assert agent.inbox()[0]["state"] == "pending"
        assert web.post("/logout", headers={"Origin": "http://evil.example"}).status_code == 403
        done = web.post(path, data=form, headers={"Origin": LOCAL, "Sec-Fetch-Site": "same-origin"})
    assert done.status_code == 200
    assert agent.inbox()[0]["state"] == "ignored"


# -- bounded bodies ---------------------------------------------------------------------------


def _chunks(total: int, size: int = 16384) -> Iterator[bytes]:
    for _ in range(total // size):
        yield b"t" * size


@pytest.mark.parametrize("path", ["/login", "/logout", "/dead/m-1/requeue"])
def test_bodies_past_64_kib_get_413(hub: Hub, path: str) -> None:
    with TestClient(build_app(hub, allow_actions=True), base_url=LOCAL) as web:
        declared = web.post(path, content=b"t" * (MAX_BODY_BYTES + 1))
        assert declared.status_code == 413
        streamed = web.post(path, content=_chunks(4 * MAX_BODY_BYTES))  # no Content-Length
        assert streamed.status_code == 413
        assert web.post("/login", content=b"token=x" + b"x" * 1000).status_code != 413


class _Counting:
    """An ASGI receive that counts what the app pulled from a long chunked stream."""

    def __init__(self, total_chunks: int) -> None:
        self.left = total_chunks
        self.pulled = 0

    async def __call__(self) -> dict[str, Any]:
        self.left -= 1
        self.pulled += 16384
        return {"type": "http.request", "body": b"x" * 16384, "more_body": self.left > 0}


def test_the_stream_is_not_read_past_the_limit(hub: Hub) -> None:
    import anyio

    app = build_app(hub)
    receive = _Counting(total_chunks=2048)  # 32 MiB on offer
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/login",
        "raw_path": b"/login",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
        "scheme": "http",
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 5000),
        "root_path": "",
        "http_version": "1.1",
        "app": app,
    }
    anyio.run(app, scope, receive, send)
    assert sent[0]["status"] == 413
    assert receive.pulled <= MAX_BODY_BYTES + 16384


def test_an_event_stream_ends_with_its_session(hub: Hub) -> None:
    import anyio

    from tidings.web import sse

    app = build_app(hub, token=TOKEN)
    guard = app.state.console.guard
    session = guard.sessions.start()
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/events",
        "raw_path": b"/events",
        "query_string": b"",
        "scheme": "http",
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 5000),
        "root_path": "",
        "http_version": "1.1",
        "headers": [(b"host", b"127.0.0.1"), (b"cookie", f"{COOKIE}={session}".encode())],
        "app": app,
    }
    chunks: list[bytes] = []
    requests = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive() -> dict[str, Any]:
        if requests:
            return requests.pop()
        await anyio.sleep(30)  # the client stays
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        chunks.append(message.get("body", b""))
        if len(chunks) == 2:  # the first bytes went out: sign out now
            guard.sessions.end(session)

    async def run() -> None:
        original = sse.KEEPALIVE_SECONDS
        sse.KEEPALIVE_SECONDS = 0.05
        try:
            with anyio.fail_after(5):  # ends by itself, not by the client going away
                await app(scope, receive, send)
        finally:
            sse.KEEPALIVE_SECONDS = original

    anyio.run(run)
    assert b"retry:" in b"".join(chunks)
