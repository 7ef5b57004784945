"""``tidings web`` as a real process: a token off loopback (issue 16 acceptance 3) and for
actions on loopback, bounded bodies (issue 24 acceptance 3, 4; interfaces.md "Local trust")."""

from __future__ import annotations

import contextlib
import http.cookiejar
import re
import select
import signal
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.groups import TIMING
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup, TidingsProcess, run_cli
from tests.support.redis_server import RedisServer, free_port

pytestmark = pytest.mark.e2e


def status_code(url: str, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)


def test_non_loopback_without_token_refuses_to_start(e2e_env: dict[str, str]) -> None:
    done = run_cli(["web", "--host", "0.0.0.0", "--port", str(free_port())], e2e_env, timeout=30)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "TIDINGS_WEB_TOKEN" in lines[0], done.stderr
    assert "Traceback" not in done.stderr


#: A token off loopback has at least 32 characters (interfaces.md, Never silent: weak_token).
TOKEN = "t0ken-" + "x" * 26


@TIMING
def test_non_loopback_with_token_answers_401_without_it(
    procs: ProcessGroup, own_redis: RedisServer
) -> None:
    port = free_port()
    web = procs.start(
        "web",
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
        "--redis-url",
        own_redis.url,
        env={"TIDINGS_WEB_TOKEN": TOKEN},
    )
    ready = web.wait_ready(timeout=30)
    assert ready["token"] is True
    base = f"http://127.0.0.1:{port}"
    assert status_code(f"{base}/api/status") == 401
    assert status_code(f"{base}/", {"Accept": "text/html"}) == 401
    assert status_code(f"{base}/api/status", {"Authorization": "Bearer wrong"}) == 401
    assert status_code(f"{base}/api/status", {"Authorization": f"Bearer {TOKEN}"}) == 200
    events = urllib.request.Request(f"{base}/events", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(events, timeout=10) as stream:
        assert stream.readline().startswith(b"retry:")
        started = time.monotonic()
        # An open event stream does not hold the exit (uvicorn ends by re-raising SIGTERM).
        assert web.stop(timeout=10) in (0, -signal.SIGTERM)
    assert time.monotonic() - started < 8


def login_url(web: TidingsProcess) -> str:
    """The login URL a loopback ``--allow-actions`` console prints once to stderr."""

    def found() -> str | None:
        for line in web.stderr:
            match = re.search(r"http://127\.0\.0\.1:\d+/login\?token=[\w-]+", line)
            if match:
                return match.group(0)
        return None

    return wait_until(found, timeout=10, what="the login URL on stderr")


def test_actions_on_loopback_need_the_printed_token(
    procs: ProcessGroup, own_redis: RedisServer
) -> None:
    """Issue 24 acceptance 3 (interfaces.md "Local trust"): ``tidings web --allow-actions`` on
    loopback with no token: ``/`` is 401; stderr carries a ``/login?token=`` URL; with
    that token, as a bearer or through the cookie the URL sets, ``/`` is 200."""
    port = free_port()
    web = procs.start("web", "--port", str(port), "--allow-actions", "--redis-url", own_redis.url)
    assert web.wait_ready(timeout=30)["token"] is True
    base = f"http://127.0.0.1:{port}"
    assert status_code(f"{base}/") == 401
    url = login_url(web)
    assert url.startswith(f"{base}/login?token=")
    assert sum("/login?token=" in line for line in web.stderr) == 1  # printed once
    token = url.split("token=", 1)[1]
    assert status_code(f"{base}/", {"Authorization": f"Bearer {token}"}) == 200
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(url, timeout=10) as signed_in:  # 303 to / with the session cookie
        assert signed_in.status == 200 and signed_in.url == f"{base}/"
    assert [c.name for c in jar] == ["tidings_web"]
    with opener.open(f"{base}/api/status", timeout=10) as status:
        assert status.status == 200


def test_read_only_on_loopback_stays_open(procs: ProcessGroup, own_redis: RedisServer) -> None:
    port = free_port()
    web = procs.start("web", "--port", str(port), "--redis-url", own_redis.url)
    assert web.wait_ready(timeout=30)["token"] is False
    assert status_code(f"http://127.0.0.1:{port}/") == 200
    assert not any("token=" in line for line in web.stderr)


def vm_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def post_chunked(port: int, path: str, total: int, chunk: int = 65536) -> bytes:
    """POST ``total`` bytes in chunks (no Content-Length); the reply, once it comes."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    reply = b""
    with sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: "
            "application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        piece = b"%x\r\n" % chunk + b"t" * chunk + b"\r\n"
        with contextlib.suppress(OSError):  # the server may close as soon as it answers
            for _ in range(total // chunk):
                sock.sendall(piece)
                if select.select([sock], [], [], 0)[0]:
                    break
            else:
                sock.sendall(b"0\r\n\r\n")
        with contextlib.suppress(OSError):
            reply = sock.recv(65536)
    return reply


def test_a_32_mib_login_post_gets_413_and_is_not_buffered(
    procs: ProcessGroup, own_redis: RedisServer
) -> None:
    """Issue 24 acceptance 4: 32 MiB streamed to ``/login`` of a real ``tidings web``
    (token in force): 413, and the server's RSS grows by less than 16 MiB."""
    port = free_port()
    web = procs.start("web", "--port", str(port), "--allow-actions", "--redis-url", own_redis.url)
    web.wait_ready(timeout=30)
    base = f"http://127.0.0.1:{port}"
    assert status_code(f"{base}/login") == 200  # templates loaded before measuring
    before = vm_rss_kib(web.pid)
    reply = post_chunked(port, "/login", 32 * 1_048_576)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    grown_mib = (vm_rss_kib(web.pid) - before) / 1024
    assert grown_mib < 16, f"RSS grew {grown_mib:.1f} MiB"
    declared = urllib.request.Request(f"{base}/login", data=b"t" * 70_000, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(declared, timeout=10)
    refused.value.close()
    assert refused.value.code == 413
