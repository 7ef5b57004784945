"""The per-agent observation lock (memory-inbox.md M52).

A Redis key holding a token with a lease (``observe_lock_seconds``), renewed
every third of the lease by a background thread while held and released by token,
so a holder that outlived its lease never frees someone else's lock. The token
names its holder (:mod:`holder`): a waiter on the same host whose holder process
is gone takes the lock over at once; holders on other hosts are waited out (the
lease). Inline and worker observations take the same lock. If the lease is lost
anyway, the checkpoint's compare-and-set (M40) still protects the commit.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tidings.jobs import log
from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.holder import holder_gone, new_token
from tidings.store.inbox_keys import InboxKeys
from tidings.store.scripts import memory as memory_scripts

#: M52: how long a waiter tries before answering ``observation_busy``.
WAIT_SECONDS = 30.0
#: Pause bounds between attempts while waiting (seconds).
_FIRST_PAUSE, _MAX_PAUSE = 0.005, 0.1


class ObservationBusy(Exception):
    """The lock was not obtained within :data:`WAIT_SECONDS`."""


class _Renewer(threading.Thread):
    def __init__(self, rt: Runtime, agent_id: str, token: str, lease_ms: int) -> None:
        self._key = InboxKeys(agent_id).observe_lock
        super().__init__(name=f"observe-lock-renew {self._key}", daemon=True)
        self._rt, self._agent_id, self._token, self._lease_ms = rt, agent_id, token, lease_ms
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(self._lease_ms / 3000):
            try:
                held = memory_scripts.renew_observe_lock(
                    self._rt.scripts, self._agent_id, token=self._token, lease_ms=self._lease_ms
                )
            except Exception as exc:  # a failed renewal must not kill the observation
                log.event("observe_lock_renew_failed", key=self._key, error=type(exc).__name__)
                continue
            if not held:
                log.event("observe_lock_lost", key=self._key)
                return

    def stop(self) -> None:
        self._done.set()
        self.join()


def _take(rt: Runtime, agent_id: str, token: str, lease_ms: int) -> bool:
    """SET NX; a refusal of a key that holds our own token means an earlier try of this
    same SET took the lock and only its reply was lost (the client re-sent it after a
    connection error), so the lock is ours rather than busy until its lease runs out.
    A key whose holder process is gone from this host is taken over (M52)."""
    key = InboxKeys(agent_id).observe_lock
    if rt.redis.set(key, token, nx=True, px=lease_ms):
        return True
    held = replies.text_or_none(rt.redis.get(key))
    if held == token:
        return True
    if held is None or not holder_gone(held):
        return False
    log.event("observe_lock_taken_over", key=key, holder=held.split(" ", 1)[-1])
    return memory_scripts.take_over_observe_lock(
        rt.scripts, agent_id, gone_token=held, token=token, lease_ms=lease_ms
    )


@contextmanager
def observe_lock(rt: Runtime, agent_id: str) -> Iterator[None]:
    """Hold the agent's observation lock for the ``with`` block, or raise
    :class:`ObservationBusy` after :data:`WAIT_SECONDS`."""
    token = new_token()
    lease_ms = max(1, int(rt.settings.observe_lock_seconds * 1000))
    deadline = rt.clock.monotonic() + WAIT_SECONDS
    pause = _FIRST_PAUSE
    while not _take(rt, agent_id, token, lease_ms):
        if rt.clock.monotonic() >= deadline:
            raise ObservationBusy(f"the observation lock of {agent_id} stayed busy")
        rt.clock.sleep(pause)
        pause = min(pause * 2, _MAX_PAUSE)
    renewer = _Renewer(rt, agent_id, token, lease_ms)
    renewer.start()
    try:
        yield
    finally:
        renewer.stop()
        memory_scripts.release_observe_lock(rt.scripts, agent_id, token=token)
