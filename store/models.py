"""pydantic models of the records tidings stores and validates."""

from __future__ import annotations

import hashlib
import os
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, StringConstraints, field_validator

#: Agent ids and host names: safe inside a Redis hash tag and a queue name.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"

#: Limits of a per-channel retained-event bound (channels.md C12).
MIN_RETAINED, MAX_RETAINED = 1, 10_000

Priority = Literal["low", "normal", "high"]


def default_agent_id(workdir: str | os.PathLike[str]) -> str:
    """A stable digest of the workdir's real path."""
    real = os.path.realpath(workdir)
    return "w" + hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:20]


class AgentRecord(BaseModel):
    """One registered agent: where its files are and which host serves it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    agent_id: str = Field(pattern=NAME_PATTERN)
    workdir: str
    memory_repo: str | None = None
    host: str = Field(pattern=NAME_PATTERN)
    max_events: dict[str, int] = Field(default_factory=dict)

    @field_validator("workdir")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not os.path.isabs(value):
            raise ValueError("workdir must be an absolute path")
        return value

    @field_validator("max_events")
    @classmethod
    def _bounds(cls, value: dict[str, int]) -> dict[str, int]:
        for channel, n in value.items():
            if isinstance(n, bool) or not isinstance(n, int):
                raise ValueError(f"max_events[{channel!r}] must be an integer")
            if not MIN_RETAINED <= n <= MAX_RETAINED:
                raise ValueError(f"max_events[{channel!r}] must be in 1..10000")
        return value

    @cached_property
    def root(self) -> Path:
        # Built once per record: one visit asks for it a dozen times (C27's hot path).
        return Path(self.workdir)

    @property
    def public(self) -> dict[str, str | None]:
        return {
            "agent_id": self.agent_id,
            "workdir": self.workdir,
            "memory_repo": self.memory_repo,
            "host": self.host,
        }


#: A caller-chosen id or key: a non-empty string of at most 200 characters (C11).
CallerKey = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=200)]


class Envelope(BaseModel):
    """What a producer may publish as a whole mirror (channels.md C8, C10).

    Used to validate; the stored envelope is the producer's own dict (key order
    kept) with absent defaults filled in.
    """

    model_config = ConfigDict(extra="allow")

    header: StrictStr = ""
    icon: StrictStr = "🔔"
    priority: Priority = "normal"
    published_at: object = None
    data: object = None
    instructions: StrictStr | None = None


class Event(BaseModel):
    """A record appended to ``data.events`` (channels.md C11); other keys are kept."""

    model_config = ConfigDict(extra="allow")

    event_id: CallerKey | None = None
    idempotency_key: CallerKey | None = None
