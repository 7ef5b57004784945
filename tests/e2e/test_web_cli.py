"""Issue 16 acceptance 3: ``tidings web`` on a non-loopback address needs a token."""

from __future__ import annotations

import signal
import time
import urllib.error
import urllib.request

import pytest

from tests.support.processes import ProcessGroup, run_cli
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
    done = run_cli(["web", "--host", "0.0.0.0", "--port", str(free_port())], e2e_env,
                   timeout=30)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "TIDINGS_WEB_TOKEN" in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_non_loopback_with_token_answers_401_without_it(
        procs: ProcessGroup, own_redis: RedisServer) -> None:
    port = free_port()
    web = procs.start("web", "--host", "0.0.0.0", "--port", str(port), "--redis-url",
                      own_redis.url, env={"TIDINGS_WEB_TOKEN": "t0ken"})
    ready = web.wait_ready(timeout=30)
    assert ready["token"] is True
    base = f"http://127.0.0.1:{port}"
    assert status_code(f"{base}/api/status") == 401
    assert status_code(f"{base}/", {"Accept": "text/html"}) == 401
    assert status_code(f"{base}/api/status", {"Authorization": "Bearer wrong"}) == 401
    assert status_code(f"{base}/api/status", {"Authorization": "Bearer t0ken"}) == 200
    events = urllib.request.Request(f"{base}/events", headers={"Authorization": "Bearer t0ken"})
    with urllib.request.urlopen(events, timeout=10) as stream:
        assert stream.readline().startswith(b"retry:")
        started = time.monotonic()
        # An open event stream does not hold the exit (uvicorn ends by re-raising SIGTERM).
        assert web.stop(timeout=10) in (0, -signal.SIGTERM)
    assert time.monotonic() - started < 8
