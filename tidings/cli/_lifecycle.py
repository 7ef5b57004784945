"""How a long-running command waits: signals, health checks and systemd's watchdog."""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Callable, Mapping

from tidings._sdnotify import notify, watchdog_interval
from tidings.store.connection import stop_retrying

#: Longest pause between two health checks of a running process (seconds).
CHECK_SECONDS = 0.5

#: Answers ``None`` while healthy, else what went wrong.
Health = Callable[[], str | None]


def say(payload: Mapping[str, object]) -> None:
    """One JSON line on stdout (ready lines, scheduler events)."""
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def ready(payload: Mapping[str, object], text: str | None = None) -> None:
    """The ready line (``text`` for people, else ``payload`` as JSON), and ``READY=1``
    to systemd (``Type=notify``)."""
    if text is None:
        say(payload)
    else:
        print(text, flush=True)
    notify("READY=1")


def _healthy() -> str | None:
    return None


def stop_signals() -> threading.Event:
    """An event set by SIGINT or SIGTERM. Installed before the ready line, so a signal
    that follows the ready line at once stops the process cleanly, not by default.

    The signal also ends the Redis clients' failover retries (store.connection): a
    stop with Redis gone must not wait out their budget in every thread it joins.
    """
    stop = threading.Event()

    def on_signal(*_: object) -> None:
        stop_retrying()
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    return stop


def run_until_stopped(stop: threading.Event, health: Health = _healthy) -> str | None:
    """Block until ``stop`` is set (``None``) or until ``health`` names a failure (returned).

    While healthy, systemd's watchdog is fed; a hung process stops feeding it and is
    restarted by ``WatchdogSec=``. Either way the process stops next, so its failover
    retries end here too (as on a signal).
    """
    watchdog = watchdog_interval()
    period = min(CHECK_SECONDS, watchdog) if watchdog else CHECK_SECONDS
    while not stop.wait(period):
        failure = health()
        if failure is not None:
            stop_retrying()
            return failure
        if watchdog:
            notify("WATCHDOG=1")
    notify("STOPPING=1")
    return None
