"""A hooks-registry manifest parsed once into a frozen record (channels.md C38, C39; issue
10's typed seams).

``hooks.json`` is written by the agent's tool and by any local process, so each item
is typed at the parse: a field of another type reads as ``None`` and every reader
(the allow predicate, retention, the registry actions) sees the same verdict.
``raw`` keeps the object as read, so a rewrite keeps fields tidings does not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from tidings.jobs.channels.names import RESERVED_STEMS, name_error
from tidings.store.models import MAX_RETAINED, MIN_RETAINED


@dataclass(frozen=True)
class Manifest:
    """One registry item."""

    raw: Mapping[str, object]
    #: ``name`` and ``channel`` as stored, when they are strings.
    name: str | None = None
    channel: str | None = None
    #: C39: ``max_events`` when it is an integer in 1..10,000.
    max_events: int | None = None

    @classmethod
    def parse(cls, value: Mapping[str, object]) -> Manifest:
        name, channel, n = value.get("name"), value.get("channel"), value.get("max_events")
        max_events = (
            n
            if isinstance(n, int) and not isinstance(n, bool) and MIN_RETAINED <= n <= MAX_RETAINED
            else None
        )
        return cls(
            raw=MappingProxyType(dict(value)),
            name=name if isinstance(name, str) else None,
            channel=channel if isinstance(channel, str) else None,
            max_events=max_events,
        )

    @property
    def hook_channel(self) -> str | None:
        """C5: the channel this manifest allows, if it is a valid, unreserved name."""
        channel = self.channel
        if channel is not None and name_error(channel) is None and channel not in RESERVED_STEMS:
            return channel
        return None

    def document(self) -> dict[str, object]:
        """The item as written to ``hooks.json`` and shown by ``list``."""
        return dict(self.raw)
