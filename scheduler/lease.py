"""The host's scheduler leader lease (delay.md D18).

One scheduler per host is active: the one holding ``{h:<host>}:scheduler:leader``.
The value is this holder's JSON record (``holder``, ``since``, ``token``) and doubles
as the token: renewal and release are Lua scripts that act only while the key still
holds exactly that value, so a leader that lost the lease cannot extend or drop
its successor's. ``token`` names the holder process (:mod:`tidings.store.holder`): a
scheduler on the same host that finds that process gone (SIGKILLed ``tidings up``)
takes the lease over at once instead of waiting out its expiry, as M52 does for the
observation lock (issue 30).
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Sequence
from typing import TypedDict

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from redis import Redis

from tidings.jobs import log
from tidings.store import keys, replies
from tidings.store.holder import holder_gone, new_token
from tidings.store.jsonfmt import compact_sorted, utc_stamp
from tidings.store.scripts import Scripts
from tidings.store.scripts import scheduler as scheduler_scripts


class LeaseSettings(BaseSettings):
    """Lease timing, from ``TIDINGS_SCHEDULER_LEASE_SECONDS`` / ``..._RENEW_SECONDS``.

    The defaults are the spec's (expiry 10 s, renewed every 3 s); end-to-end tests
    shorten both so a hand-over does not cost ten seconds per test.
    """

    model_config = SettingsConfigDict(env_prefix="TIDINGS_SCHEDULER_", extra="ignore")

    #: D18: the lease expires this long after its last renewal.
    lease_seconds: float = Field(default=10.0, gt=0)
    #: D18: the leader renews this often.
    renew_seconds: float = Field(default=3.0, gt=0)

    @property
    def standby_poll_seconds(self) -> float:
        """How often a standby tries to take a lapsed lease."""
        return min(1.0, self.renew_seconds / 3)


def holder_name() -> str:
    """A name for this process that is unique among the host's schedulers."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class LeaderLease:
    """Acquire, renew and release one host's leader lease."""

    def __init__(self, redis: Redis, host: str, holder: str, settings: LeaseSettings) -> None:
        self.redis = redis
        self.host = host
        self.key = keys.scheduler_leader(host)
        self.holder = holder
        self.settings = settings
        self._scripts = Scripts(redis)
        self._token = new_token()
        self._value: str | None = None

    @property
    def _expiry_ms(self) -> int:
        return max(1, round(self.settings.lease_seconds * 1000))

    def try_acquire(self, now: float) -> bool:
        """Take the lease if nobody holds it, or if its holder process is gone from this
        host. A key holding this very value means an earlier try of this SET took it and
        only its reply was lost (the client re-sent it)."""
        value = compact_sorted(
            {"holder": self.holder, "since": utc_stamp(now), "token": self._token}
        )
        if self.redis.set(self.key, value, nx=True, px=self._expiry_ms):
            self._value = value
            return True
        held = replies.text_or_none(self.redis.get(self.key))
        if held == value:
            self._value = value
            return True
        if held is None or not holder_gone(_token(held)):
            return False
        if not scheduler_scripts.take_over_lease(
            self._scripts, self.host, gone_value=held, value=value, expiry_ms=self._expiry_ms
        ):
            return False
        gone = _leader(held)
        log.event(
            "scheduler_lease_taken_over",
            host=self.host,
            holder=gone["leader"] if gone is not None else None,
        )
        self._value = value
        return True

    def renew(self) -> bool:
        """Extend the lease; ``False`` once another holder has it (or nobody does)."""
        if self._value is None:
            return False
        return scheduler_scripts.renew_lease(
            self._scripts, self.host, value=self._value, expiry_ms=self._expiry_ms
        )

    def release(self) -> None:
        """Give the lease up at once, if it is still ours."""
        value, self._value = self._value, None
        if value is not None:
            scheduler_scripts.release_lease(self._scripts, self.host, value=value)


class Leader(TypedDict):
    """The host's active scheduler as its lease record says (values as stored)."""

    leader: object
    since: object


def leaders(redis: Redis, hosts: Sequence[str]) -> dict[str, Leader | None]:
    """``{"leader", "since"}`` of each of ``hosts``' active scheduler, or ``None`` (``tidings
    status``): one pipelined ``GET`` per host, never a keyspace scan (issue 25)."""
    with redis.pipeline(transaction=False) as pipe:
        for host in hosts:
            pipe.get(keys.scheduler_leader(host))
        raws = pipe.execute()
    return {host: _leader(raw) for host, raw in zip(hosts, raws, strict=True)}


def current_leader(redis: Redis, host: str) -> Leader | None:
    """``{"leader", "since"}`` of the host's active scheduler, or ``None`` (``tidings status``)."""
    return _leader(redis.get(keys.scheduler_leader(host)))


def _token(raw: str) -> str:
    """The holder token of a lease value; ``""`` (never judged gone) when it has none."""
    try:
        token = json.loads(raw).get("token")
    except (ValueError, AttributeError):
        return ""
    return token if isinstance(token, str) else ""


def _leader(raw: bytes | str | None) -> Leader | None:
    if raw is None:
        return None
    try:
        record = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    return {"leader": record.get("holder"), "since": record.get("since")}
