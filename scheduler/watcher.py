"""Which agents' channel files changed since the last tick: inotify (channels.md C27).

Library: ``inotify_simple``, a thin ctypes wrapper over the three kernel calls. The
tick needs exactly what the kernel reports: ``IN_Q_OVERFLOW`` (events were lost, so
scan everything now), ``ENOSPC`` from ``inotify_add_watch`` (``max_user_watches`` is
exhausted, so that agent is scanned every tick) and ``IN_IGNORED`` (a watched
directory went away). ``watchfiles`` (Rust ``notify``) debounces, recurses and hides
both the overflow and the per-watch failure; ``asyncinotify`` is built around an
asyncio loop, where the scheduler runs plain threads.

Per agent up to three watches: the workdir (only ``.notification`` and
``notification.json`` (C33) matter there), ``.notification/`` and
``.notification/daemon/`` (mini-files, C30). A workdir that does not exist yet is
found through a watch on its parent. An agent with no watch (limit reached, no
parent, any other refusal) is *unwatched*: the tick visits it every time, and the
watcher retries it at every full scan. Reaching the watch limit also asks for one
full scan at once (events of agents being re-watched may be lost). A newly
watched agent is *fresh*: visited once (unless a full scan starts at that tick
anyway), which covers writes made before its watch existed.

With prompt visits (C27) the watcher hands each change at once to ``on_change``
(which starts those agents' visits within the debounce) instead of keeping it for
the next tick; fresh and unwatched agents, overflows and failures stay the tick's.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from inotify_simple import Event, INotify, flags

from tidings.jobs import log, metrics
from tidings.jobs.channels import NOTIFICATION_DIR

#: Events that may change what a tick reads.
CHANGE_MASK = (
    flags.CREATE
    | flags.DELETE
    | flags.MODIFY
    | flags.CLOSE_WRITE
    | flags.ATTRIB
    | flags.MOVED_FROM
    | flags.MOVED_TO
    | flags.DELETE_SELF
    | flags.MOVE_SELF
    | flags.ONLYDIR
    | flags.DONT_FOLLOW
)
#: Events that say a watched directory itself is gone or moved.
SELF_GONE = flags.DELETE_SELF | flags.MOVE_SELF
#: Names inside a workdir that a tick reads.
WORKDIR_NAMES = frozenset({NOTIFICATION_DIR, "notification.json"})
#: Names inside ``.notification/`` that no visit reads: the lock directory, which a
#: visit itself creates (its own lock, C27) — it must not report itself as a change.
UNREAD_NAMES = frozenset({".locks"})
#: Longest wait of one read (ms); bounds how long :meth:`Watcher.close` takes.
READ_TIMEOUT_MS = 200

WORKDIR, NOTIFY, DAEMON_DIR, PARENT = "workdir", "notification", "daemon", "parent"


@dataclass(frozen=True)
class Changes:
    """What the tick must visit besides the agents with a due delay."""

    #: Agents whose watched directories saw an event since the last :meth:`Watcher.take`.
    changed: frozenset[str]
    #: Agents watched since the last take (registered, or watchable again): visited
    #: once, unless a full scan starts now anyway.
    fresh: frozenset[str]
    #: Agents without watches: visited every tick.
    unwatched: frozenset[str]
    #: Events were lost (overflow) or the watcher failed: visit every agent now.
    full: bool
    reason: str = ""


class Watcher:
    """inotify watches over the registered agents of one host; thread-safe."""

    def __init__(
        self,
        inotify: Callable[[], INotify] = INotify,
        on_change: Callable[[frozenset[str]], None] | None = None,
    ) -> None:
        self._inotify = inotify()
        self._on_change = on_change
        self._lock = threading.Lock()
        self._agents: dict[str, Path] = {}
        self._owners: dict[int, dict[str, str]] = {}  # wd -> agent id -> role
        self._wds: dict[str, list[int]] = {}
        self._changed: set[str] = set()
        self._fresh: set[str] = set()
        self._unwatched: set[str] = set()
        self._full_reason = ""
        self._limit_warned = False
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tidings-watcher", daemon=True)
        self._thread.start()

    # -- registration -------------------------------------------------------------------

    def set_agents(self, workdirs: Mapping[str, str | Path]) -> None:
        """Watch exactly these agents (agent id -> workdir); new ones count as changed."""
        with self._lock:
            for agent_id in [a for a in self._agents if a not in workdirs]:
                self._unwatch(agent_id)
                del self._agents[agent_id]
                self._changed.discard(agent_id)
                self._fresh.discard(agent_id)
                self._unwatched.discard(agent_id)
            for agent_id, workdir in workdirs.items():
                root = Path(workdir)
                if self._agents.get(agent_id) != root:
                    self._agents[agent_id] = root
                    self._watch(agent_id, self._fresh)
            self._report_unwatched()

    def retry_unwatched(self) -> None:
        """Try again to watch the agents without watches (at every full scan)."""
        with self._lock:
            for agent_id in list(self._unwatched):
                self._watch(agent_id, self._fresh)
            self._report_unwatched()

    def take(self) -> Changes:
        """The changes since the last call (the changed set starts afresh)."""
        with self._lock:
            changed, self._changed = frozenset(self._changed), set()
            fresh, self._fresh = frozenset(self._fresh - changed), set()
            reason, self._full_reason = self._full_reason, ""
            if not self._thread.is_alive() and not self._closed.is_set():
                reason = "watcher_error"
            return Changes(changed, fresh, frozenset(self._unwatched), bool(reason), reason)

    @property
    def watches(self) -> int:
        return len(self._owners)

    def close(self) -> None:
        self._closed.set()
        self._thread.join(READ_TIMEOUT_MS / 1000 * 5)
        self._inotify.close()

    # -- watches (caller holds the lock) --------------------------------------------------

    def _add(self, agent_id: str, path: Path, role: str) -> None:
        wd = int(self._inotify.add_watch(os.fsencode(path), CHANGE_MASK))
        self._owners.setdefault(wd, {})[agent_id] = role
        self._wds.setdefault(agent_id, []).append(wd)

    def _watch(self, agent_id: str, mark: set[str]) -> None:
        self._unwatch(agent_id)
        root = self._agents[agent_id]
        mark.add(agent_id)
        try:
            if root.is_dir():
                self._add(agent_id, root, WORKDIR)
                notify = root / NOTIFICATION_DIR
                if notify.is_dir():
                    self._add(agent_id, notify, NOTIFY)
                    if (notify / "daemon").is_dir():
                        self._add(agent_id, notify / "daemon", DAEMON_DIR)
            elif root.parent.is_dir():
                self._add(agent_id, root.parent, PARENT)
            else:
                raise FileNotFoundError(errno.ENOENT, "no workdir and no parent", str(root))
        except OSError as exc:
            self._unwatch(agent_id)
            self._unwatched.add(agent_id)
            if exc.errno == errno.ENOSPC and not self._limit_warned:
                self._limit_warned = True
                self._full_reason = self._full_reason or "watch_limit"
                log.event(
                    "notification_watch_limit",
                    watches=len(self._owners),
                    detail="fs.inotify.max_user_watches reached; agents left over "
                    "are scanned every tick",
                )
            return
        self._unwatched.discard(agent_id)

    def _unwatch(self, agent_id: str) -> None:
        for wd in self._wds.pop(agent_id, []):
            owners = self._owners.get(wd)
            if owners is None:
                continue
            owners.pop(agent_id, None)
            if not owners:
                del self._owners[wd]
                with contextlib.suppress(OSError):  # the kernel dropped it (IN_IGNORED)
                    self._inotify.rm_watch(wd)

    def _report_unwatched(self) -> None:
        metrics.unwatched_agents(len(self._unwatched))
        if not self._unwatched:
            self._limit_warned = False

    # -- events ---------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._closed.is_set():
            try:
                events = self._inotify.read(timeout=READ_TIMEOUT_MS)
            except (OSError, ValueError) as exc:
                if not self._closed.is_set():
                    log.event(
                        "notification_watcher_failed",
                        error=type(exc).__name__,
                        detail=str(exc)[:200],
                    )
                return
            if not events:
                continue
            with self._lock:
                changed = self._handle(events)
                if self._on_change is None:
                    self._changed |= changed
            if changed and self._on_change is not None:
                self._on_change(frozenset(changed))

    def _handle(self, events: Iterable[Event]) -> set[str]:
        """The agents these events changed (watches follow reshaped directories)."""
        changed: set[str] = set()
        rewatch: set[str] = set()
        for event in events:
            if event.mask & flags.Q_OVERFLOW:
                if not self._full_reason:
                    log.event(
                        "notification_watch_overflow",
                        logging.WARNING,
                        detail="inotify queue overflowed; full scan now",
                    )
                self._full_reason = "overflow"
                continue
            owners = self._owners.get(event.wd)
            if not owners:
                continue
            if event.mask & flags.IGNORED:
                del self._owners[event.wd]
                for agent_id in owners:
                    self._wds[agent_id] = [w for w in self._wds.get(agent_id, []) if w != event.wd]
                rewatch.update(owners)
                continue
            for agent_id, role in owners.items():
                if self._matters(agent_id, role, event.name):
                    changed.add(agent_id)
                    if self._reshapes(role, event):
                        rewatch.add(agent_id)
        for agent_id in rewatch & self._agents.keys():
            self._watch(agent_id, changed)
        if rewatch:
            self._report_unwatched()
        return changed

    def _matters(self, agent_id: str, role: str, name: str) -> bool:
        if role == NOTIFY and name in UNREAD_NAMES:
            return False
        if not name or role in (NOTIFY, DAEMON_DIR):
            return True
        if role == PARENT:
            return name == self._agents[agent_id].name
        return name in WORKDIR_NAMES

    @staticmethod
    def _reshapes(role: str, event: Event) -> bool:
        """Whether the event changes which directories must be watched."""
        if event.mask & SELF_GONE or role == PARENT:
            return True
        if role == WORKDIR:
            return bool(event.name == NOTIFICATION_DIR)
        return role == NOTIFY and event.name == "daemon"


def start(on_change: Callable[[frozenset[str]], None] | None = None) -> Watcher | None:
    """A watcher, or ``None`` where inotify is not available (full scans every tick);
    ``on_change``: prompt visits (see the module's docstring)."""
    try:
        return Watcher(on_change=on_change)
    except OSError as exc:
        log.event(
            "notification_watcher_unavailable", error=type(exc).__name__, detail=str(exc)[:200]
        )
        return None
