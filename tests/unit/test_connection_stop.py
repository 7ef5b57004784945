"""FailoverRetry (store/connection.py) gives up once the process is stopping, and only then."""

from __future__ import annotations

import copy
import threading
import time

import pytest
from redis.exceptions import ConnectionError

from tests.support.groups import TIMING
from tests.support.polling import wait_until
from tidings.store import connection
from tidings.store.connection import FailoverRetry


class Failing:
    """A ``do`` that fails its first ``failures`` calls (all of them by default)."""

    def __init__(self, failures: int | None = None) -> None:
        self.failures = failures
        self.calls = 0
        self.failed: list[Exception] = []

    def do(self) -> str:
        self.calls += 1
        if self.failures is None or self.calls <= self.failures:
            raise ConnectionError("no master answers")
        return "answered"

    def fail(self, error: Exception) -> None:
        self.failed.append(error)


@TIMING
def test_a_stopping_process_gives_up_at_the_first_failure() -> None:
    stopping = threading.Event()
    stopping.set()
    failing = Failing()
    started = time.monotonic()
    with pytest.raises(ConnectionError):
        FailoverRetry(seconds=30.0, stopping=stopping).call_with_retry(failing.do, failing.fail)
    assert time.monotonic() - started < 1.0
    assert failing.calls == 1 and len(failing.failed) == 1


@TIMING
def test_a_retry_pausing_in_back_off_wakes_when_the_stop_begins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pause is a minute: only the stop event, not its end, can wake it within 5 s."""
    monkeypatch.setattr(connection, "RETRY_BACKOFF_BASE", 60.0)
    monkeypatch.setattr(connection, "RETRY_BACKOFF_CAP", 60.0)
    stopping = threading.Event()
    retry = FailoverRetry(seconds=120.0, stopping=stopping)
    failing = Failing()
    raised: list[BaseException] = []

    def call() -> None:
        try:
            retry.call_with_retry(failing.do, failing.fail)
        except ConnectionError as exc:
            raised.append(exc)

    thread = threading.Thread(target=call, daemon=True)  # a failure must not hold pytest
    thread.start()
    try:
        wait_until(lambda: failing.failed, what="the first failure")
    finally:
        stopping.set()
        set_at = time.monotonic()
        thread.join(5)
    assert not thread.is_alive()
    assert time.monotonic() - set_at < 2.0
    assert len(raised) == 1 and failing.calls == 1


def test_while_not_stopping_a_failing_command_is_retried_until_it_answers() -> None:
    failing = Failing(failures=3)
    result = FailoverRetry(seconds=30.0, stopping=threading.Event()).call_with_retry(
        failing.do, failing.fail
    )
    assert result == "answered" and failing.calls == 4


@TIMING
def test_while_not_stopping_the_budget_is_time_since_the_first_failure() -> None:
    failing = Failing()
    started = time.monotonic()
    with pytest.raises(ConnectionError):
        FailoverRetry(seconds=0.5, stopping=threading.Event()).call_with_retry(
            failing.do, failing.fail
        )
    assert 0.4 < time.monotonic() - started < 3.0
    assert failing.calls > 1


def test_the_copies_redis_py_makes_share_the_stop_event() -> None:
    """redis-py deep-copies the retry into every client and connection."""
    retry = FailoverRetry(seconds=7.0)
    clone = copy.deepcopy(retry)
    assert clone is not retry and clone == retry and clone.seconds == 7.0
    assert clone.stopping is retry.stopping is connection.PROCESS_STOPPING
    assert clone._backoff is not retry._backoff
