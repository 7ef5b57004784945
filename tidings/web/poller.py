"""One shared poller per console process, fanned out to every open page's event stream.

While at least one page listens, the poller reads the overview once per
:data:`INTERVAL_SECONDS` (the "status read": :class:`tidings.inspection.overview.Summary`),
renders its live fragment once, and sends the same HTML to every page. Pages also
name agents they show; the poller reads a small signature of each watched agent (its
newest wake entry, inbox counts, checkpoint version, blocked set, and for agent pages
the channel files' fingerprint and delay state) in one pipeline, and tells a page when
one of its agents changed, so the page fetches its own fresh fragment. Fifty open
pages therefore cost one status read per second, not fifty.

A wake signal is news the page should show at once (channels.md C27: a producer's
write wakes an idle agent in tens of milliseconds): beside the timer, a listener
blocks on the watched agents' wake streams and tells a page the moment one of its
agents is woken.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypedDict

import anyio.to_thread

from tidings.inspection import wakes
from tidings.inspection.signatures import Signature, signatures
from tidings.jobs.runtime import Runtime

#: Seconds between status reads while any page listens (a page updates within 2 s).
INTERVAL_SECONDS = 1.0
#: Messages a slow page may fall behind by before it misses some (it then reloads).
QUEUE_SIZE = 16
#: The most agents one page may watch.
MAX_WATCHED = 100
#: Longest blocking read of the watched agents' wake streams (ms): a page that starts or
#: stops watching is taken into account after at most this long.
WAKE_BLOCK_MS = 500
#: Pause between two reads where they cannot block (a cluster), and after a failed one (s).
WAKE_POLL_SECONDS = 0.05


class LiveSummary(TypedDict):
    """A status read as pages get it: the overview's time and dead count, and its fragment."""

    at: str
    dead: int
    html: str


class ReadFailed(TypedDict):
    """A status read that failed (Redis away): what went wrong, for the pages to say."""

    error: str


#: What a page's mailbox carries: ("summary", a status read) or ("agents", changed ids).
Message = tuple[str, LiveSummary | ReadFailed | list[str]]


@dataclass(eq=False)
class Subscriber:
    """One open page: the agents it shows (``deep``: an agent page) and its mailbox."""

    agents: frozenset[str]
    deep: bool
    #: Until the first read: the page may predate a change the poller never saw.
    fresh: bool = True
    queue: asyncio.Queue[Message] = field(default_factory=lambda: asyncio.Queue(QUEUE_SIZE))

    def offer(self, kind: str, data: LiveSummary | ReadFailed | list[str]) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            self.queue.put_nowait((kind, data))


class Poller:
    """Reads on a timer while pages listen; every page gets the same results."""

    def __init__(
        self,
        rt: Runtime,
        read_summary: Callable[[], LiveSummary],
        interval: float = INTERVAL_SECONDS,
    ) -> None:
        self.rt = rt
        self.read_summary = read_summary
        self.interval = interval
        self.subscribers: set[Subscriber] = set()
        self.status_reads = 0
        self._task: asyncio.Task[None] | None = None
        self._wake_task: asyncio.Task[None] | None = None
        self._seen: dict[str, Signature] = {}
        #: The newest wake id the listener told pages of, per agent.
        self._announced: dict[str, str] = {}
        self.latest: LiveSummary | ReadFailed | None = None

    def subscribe(self, agents: Iterable[str] = (), deep: bool = False) -> Subscriber:
        sub = Subscriber(frozenset(list(agents)[:MAX_WATCHED]), deep)
        self.subscribers.add(sub)
        if self.latest is not None:
            sub.offer("summary", self.latest)
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run())
        if self._wake_task is None or self._wake_task.done():
            self._wake_task = loop.create_task(self._listen())
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)

    def _read(self, shallow: set[str], deep: set[str]) -> tuple[LiveSummary, dict[str, Signature]]:
        self.status_reads += 1
        return self.read_summary(), signatures(self.rt, shallow, deep)

    async def _run(self) -> None:
        while self.subscribers:
            subs = list(self.subscribers)
            deep = {a for s in subs if s.deep for a in s.agents}
            shallow = {a for s in subs if not s.deep for a in s.agents}
            try:
                read, signs = await anyio.to_thread.run_sync(self._read, shallow, deep)
                summary: LiveSummary | ReadFailed = read
            except Exception as exc:  # Redis away: pages say so and the poller goes on
                summary = ReadFailed(error=f"{type(exc).__name__}: {exc}"[:300])
                signs = {}
            changed = {
                a
                for a, sign in signs.items()
                if a in self._seen
                and self._seen[a] != sign
                and not self._told(a, self._seen[a], sign)
            }
            self._seen = signs
            self.latest = summary
            for sub in subs:
                sub.offer("summary", summary)
                hit = sorted(sub.agents if sub.fresh else sub.agents & changed)
                sub.fresh = False
                if hit:
                    sub.offer("agents", hit)
            await asyncio.sleep(self.interval)
        self._seen = {}
        self._announced = {}
        self.latest = None

    def _told(self, agent_id: str, before: Signature, now: Signature) -> bool:
        """Whether the only change is a wake signal the listener already told of (its id
        is in the newest entry's repr, the signature's first part)."""
        told = self._announced.get(agent_id)
        return (
            told is not None
            and before[0][1:] == now[0][1:]
            and before[1] == now[1]
            and told in now[0][0]
        )

    def _wait_for_wakes(self, after: dict[str, str]) -> dict[str, str]:
        """The watched agents woken since ``after``, blocking a while for one."""
        missing = [a for a, seen in after.items() if not seen]
        if missing:
            after.update(wakes.newest_ids(self.rt.redis, missing))
        started = time.monotonic()
        found = wakes.woken_after(self.rt.redis, after, WAKE_BLOCK_MS)
        idle = WAKE_POLL_SECONDS - (time.monotonic() - started)
        if not found and idle > 0:  # a read that cannot block (a cluster, a fake store)
            time.sleep(idle)
        return found

    async def _listen(self) -> None:
        """Tell each page at once when one of its agents gets a wake signal."""
        after: dict[str, str] = {}
        while self.subscribers:
            watched = {a for s in self.subscribers for a in s.agents}
            if not watched:
                await asyncio.sleep(WAKE_POLL_SECONDS)
                continue
            after = {a: after.get(a, "") for a in watched}
            try:
                woken = await anyio.to_thread.run_sync(self._wait_for_wakes, after)
            except Exception:  # Redis away: the timer's read tells the pages
                await asyncio.sleep(WAKE_POLL_SECONDS)
                continue
            after.update(woken)
            self._announced.update(woken)
            for sub in list(self.subscribers):
                hit = sorted(sub.agents & woken.keys())
                if hit:
                    sub.offer("agents", hit)
