"""One shared poller per console process, fanned out to every open page's event stream.

While at least one page listens, the poller reads the overview once per
:data:`INTERVAL_SECONDS` (the "status read": :class:`tidings.inspection.overview.Summary`),
renders its live fragment once, and sends the same HTML to every page. Pages also
name agents they show; the poller reads a small signature of each watched agent (its
newest wake entry, inbox counts, checkpoint version, blocked set, and for agent pages
the channel files' fingerprint and delay state) in one pipeline, and tells a page when
one of its agents changed, so the page fetches its own fresh fragment. Fifty open
pages therefore cost one status read per second, not fifty.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypedDict

import anyio.to_thread

from tidings.inspection.signatures import Signature, signatures
from tidings.jobs.runtime import Runtime

#: Seconds between status reads while any page listens (a page updates within 2 s).
INTERVAL_SECONDS = 1.0
#: Messages a slow page may fall behind by before it misses some (it then reloads).
QUEUE_SIZE = 16
#: The most agents one page may watch.
MAX_WATCHED = 100


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
    queue: asyncio.Queue[Message] = field(
        default_factory=lambda: asyncio.Queue(QUEUE_SIZE))

    def offer(self, kind: str, data: LiveSummary | ReadFailed | list[str]) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            self.queue.put_nowait((kind, data))


class Poller:
    """Reads on a timer while pages listen; every page gets the same results."""

    def __init__(self, rt: Runtime, read_summary: Callable[[], LiveSummary],
                 interval: float = INTERVAL_SECONDS) -> None:
        self.rt = rt
        self.read_summary = read_summary
        self.interval = interval
        self.subscribers: set[Subscriber] = set()
        self.status_reads = 0
        self._task: asyncio.Task[None] | None = None
        self._seen: dict[str, Signature] = {}
        self.latest: LiveSummary | ReadFailed | None = None

    def subscribe(self, agents: Iterable[str] = (), deep: bool = False) -> Subscriber:
        sub = Subscriber(frozenset(list(agents)[:MAX_WATCHED]), deep)
        self.subscribers.add(sub)
        if self.latest is not None:
            sub.offer("summary", self.latest)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)

    def _read(self, shallow: set[str],
              deep: set[str]) -> tuple[LiveSummary, dict[str, Signature]]:
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
            changed = {a for a, sign in signs.items()
                       if a in self._seen and self._seen[a] != sign}
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
        self.latest = None
