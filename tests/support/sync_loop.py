"""A stand-in for the scheduler's sync tick (channels.md C27), as its own process.

The real tick lives in ``tidings scheduler`` (built on the delay branch). Until it
is merged, integration tests run this loop instead: ``python -m
tests.support.sync_loop REDIS_URL HOST`` calls ``jobs.sync.sync_host`` every
``TIDINGS_SYNC_INTERVAL`` seconds (default 1) and prints one JSON ready line.
Switch such tests to ``tidings scheduler`` once it exists.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from jobs.runtime import Runtime
from jobs.sync import sync_host
from store.clock import SystemClock
from store.connection import client_for
from store.settings import RedisConfig, Settings
from workers.broker import make_broker
from workers.dispatch import BrokerDispatcher


def main(argv: Sequence[str] | None = None) -> int:
    url, host = (argv if argv is not None else sys.argv[1:])[:2]
    settings = Settings(redis_url=url, host=host)
    client = client_for(RedisConfig.from_url(url))
    broker = make_broker(client, settings)
    rt = Runtime(client, SystemClock(), settings, BrokerDispatcher(broker))
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print(json.dumps({"status": "ready", "role": "sync-loop", "host": host}), flush=True)
    while not stop.wait(settings.sync_interval):
        result = sync_host(rt, host)
        if result["woke"]:
            print(json.dumps({"tick": result}), flush=True)
    broker.close()
    client.close()
    return 0


class SyncLoopProcess:
    """The stand-in as a child process (killed with SIGKILL like any crash)."""

    def __init__(self, url: str, host: str, env: dict[str, str]) -> None:
        root = Path(__file__).resolve().parents[2]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.sync_loop", url, host],
            env=env, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        if b'"ready"' not in ready:
            self.kill()
            raise RuntimeError(f"sync loop did not start: {ready!r}")

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()


if __name__ == "__main__":
    sys.exit(main())
