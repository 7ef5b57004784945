"""Process settings from the environment (``TIDINGS_*``), as one typed object.

Live-read knobs (the ``LINGTAI_*`` caps) are deliberately not here: the spec has
them read on every action, so a changed value is honoured without a restart.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from tidings.store.errors import TidingsError

#: The default store's folder under ``$XDG_STATE_HOME`` (else ``~/.local/state``).
STATE_DIR_NAME = "tidings"

#: URL schemes a Redis address may have.
SCHEMES = (
    "redis",
    "rediss",
    "unix",
    "redis+sentinel",
    "rediss+sentinel",
    "redis+cluster",
    "rediss+cluster",
)

#: dramatiq's own default heartbeat timeout (ms).
DEFAULT_HEARTBEAT_MS = 60_000

#: How the placeholder passwords of the shipped deploy files begin (``change-me-tidings``,
#: ``change-me-monitor``): a URL carrying one is refused before connecting (interfaces.md "Local
#: trust"), so a deployment never runs on a password anyone can read in the repository.
PLACEHOLDER_PASSWORD_PREFIX = "change-me"
#: A store that takes a connection and answers no PING for this long is hung
#: (``TIDINGS_STORE_HANG_SECONDS``; interfaces.md, The default store).
STORE_HANG_SECONDS = 10.0


def refuse_placeholder_password(url: str, where: str = "the Redis URL") -> None:
    """Raise ``TidingsError`` (reason ``placeholder_password``) if ``url`` carries a
    password (in the user part or a ``password`` query parameter; for a Sentinel URL the
    same password reaches the Sentinels) that starts with :data:`PLACEHOLDER_PASSWORD_PREFIX`."""
    parts = urlsplit(url)
    passwords = [unquote(parts.password or "")]
    passwords += parse_qs(parts.query).get("password", [])
    if any(p.startswith(PLACEHOLDER_PASSWORD_PREFIX) for p in passwords):
        raise TidingsError(
            f"{where} carries a placeholder password ({PLACEHOLDER_PASSWORD_PREFIX}...): set "
            "real passwords for the ACL users of deploy/redis.conf (deploy/README.md, Roles) "
            "and put them in the URL",
            reason="placeholder_password",
        )


class RedisConfig(BaseModel):
    """A parsed Redis address. Build one with :meth:`from_url`."""

    model_config = ConfigDict(frozen=True)

    url: str
    scheme: str
    sentinels: tuple[tuple[str, int], ...] = ()
    #: Seed nodes of a cluster URL.
    nodes: tuple[tuple[str, int], ...] = ()
    service_name: str | None = None
    db: int = 0
    username: str | None = None
    password: str | None = None

    @classmethod
    def from_url(cls, url: str) -> RedisConfig:
        """Accepts ``redis://``, ``rediss://``, ``unix://``,
        ``redis+sentinel://[user:pass@]host:port[,host:port...]/service[/db]`` and
        ``redis+cluster://[user:pass@]host:port[,host:port...]`` (seed nodes; interfaces.md
        "Past one Redis"), each with an ``s`` for TLS.

        A placeholder password raises ``TidingsError`` (``placeholder_password``), a
        ``ValueError`` like every other refusal here."""
        refuse_placeholder_password(url)
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES:
            raise ValueError(f"unsupported Redis URL scheme: {parts.scheme!r}")
        if "+" not in scheme:
            return cls(url=url, scheme=scheme)
        username = unquote(parts.username) if parts.username else None
        password = unquote(parts.password) if parts.password else None
        if scheme.endswith("+cluster"):
            return cls(
                url=url,
                scheme=scheme,
                nodes=_addresses(parts.netloc, 6379),
                username=username,
                password=password,
            )
        sentinels = _addresses(parts.netloc, 26379)
        path = [p for p in parts.path.split("/") if p]
        if not path:
            raise ValueError("a sentinel URL needs a service name: redis+sentinel://h:p/<service>")
        return cls(
            url=url,
            scheme=scheme,
            sentinels=sentinels,
            service_name=path[0],
            db=int(path[1]) if len(path) > 1 else 0,
            username=username,
            password=password,
        )

    @classmethod
    def cluster_seed(cls, url: str) -> RedisConfig:
        """A plain ``redis://`` or ``rediss://`` URL whose server answered
        ``cluster_enabled:1``, as the cluster configuration seeded by that node."""
        parts = urlsplit(url)
        tls = parts.scheme.lower() == "rediss"
        return cls(
            url=url,
            scheme="rediss+cluster" if tls else "redis+cluster",
            nodes=((parts.hostname or "127.0.0.1", parts.port or 6379),),
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
        )

    @property
    def is_sentinel(self) -> bool:
        return self.scheme.endswith("+sentinel")

    @property
    def is_cluster(self) -> bool:
        return self.scheme.endswith("+cluster")

    @property
    def tls(self) -> bool:
        return self.scheme.startswith("rediss")


def _addresses(netloc: str, default_port: int) -> tuple[tuple[str, int], ...]:
    """``host:port`` items of a comma-separated netloc (after any ``user:pass@``)."""
    found = []
    for item in netloc.rpartition("@")[2].split(","):
        host, _, port = item.rpartition(":")
        if not host:
            host, port = port, str(default_port)
        found.append((host.strip("[]"), int(port or default_port)))
    return tuple(found)


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/tidings``, else ``~/.local/state/tidings`` (interfaces.md, Environment)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / STATE_DIR_NAME


class Settings(BaseSettings):
    """Every ``TIDINGS_*`` variable of interfaces.md's Environment table."""

    model_config = SettingsConfigDict(env_prefix="TIDINGS_", extra="ignore")

    #: Redis URL; ``None`` means the default store: ``tidings up`` starts it, every other
    #: process finds it through ``store.json`` in :attr:`state_dir` (interfaces.md).
    redis_url: str | None = None
    #: Where ``tidings up`` keeps the default store: data, ``store.json``, socket, locks.
    state_dir: Path = Field(default_factory=default_state_dir)
    #: The default store's engine binary; ``None``: the one the installation ships.
    store_server: str | None = None
    #: The default store's loopback port (``tidings up --port`` overrides it; 0: any free
    #: port, named in the ready line).
    store_port: int = Field(default=6390, ge=0, le=65535)
    #: The default store's ``appendfsync``.
    store_fsync: Literal["everysec", "always"] = "everysec"
    #: A store that answers no PING for this long is hung: ``tidings up`` exits 1, and a
    #: client's first PING gives up with ``store_unresponsive`` (seconds).
    store_hang_seconds: float = Field(default=STORE_HANG_SECONDS, gt=0)
    #: Redis URL of the control store (broker, results, presence, rates); ``None``: the
    #: state store's (interfaces.md "Past one Redis").
    broker_url: str | None = None
    #: This host's name for queue routing.
    host: str = Field(default_factory=socket.gethostname)
    #: Seconds between sync ticks.
    sync_interval: float = Field(default=1.0, gt=0)
    #: With a filesystem watcher, the longest time between full visits of every agent by
    #: the sync tick (channels.md C27).
    full_scan_seconds: float = Field(default=30.0, gt=0)
    #: Milliseconds from a change (a watcher's report, a committed flush) to the start of
    #: that agent's prompt visit; the changes meanwhile make one visit (channels.md C27).
    visit_debounce_ms: float = Field(default=10.0, ge=0, le=10_000)
    #: Prompt visits (C27). Off, only the periodic tick visits agents, as before issue 33
    #: (``bench/wake.py --baseline`` compares the two).
    prompt_visits: bool = True
    #: Seconds before a stranded flush flag expires (channels.md C13).
    flush_flag_ttl: int = Field(default=30, ge=1)
    #: dramatiq's Redis heartbeat timeout in ms.
    broker_heartbeat_ms: int = Field(default=DEFAULT_HEARTBEAT_MS, ge=1000)
    #: Lease of the per-agent observation lock (memory-inbox.md M52).
    observe_lock_seconds: float = Field(default=60.0, gt=0)
    #: Turn lease (memory-inbox.md M43).
    turn_lease_seconds: float = Field(default=3600.0, gt=0)
    #: Standing files of the memory repository (memory-inbox.md M39): exact
    #: repository-relative paths whose change adds the persona sentence.
    memory_standing_files: tuple[str, ...] = ("PERSONA.md", "SOUL.md", "MEMORY.md")
    #: Threads reading the worktree side of one memory observation (memory-inbox.md
    #: M24). 1 is a single libgit2 pass; more split the work tree by top-level name,
    #: each thread with its own Repository (bench/memory.py: on a busy 2-core host
    #: the split costs more CPU than it saves in wall time).
    memory_observe_threads: int = Field(default=1, ge=1, le=16)
    #: How long ``prepare_turn`` waits for its worker group (observation lock wait +
    #: observation) before the turn proceeds without the missing result.
    turn_wait_seconds: float = Field(default=90.0, gt=0)
    #: Longest idle wait of a worker's queue consumer (ms), at most a quarter of the broker
    #: heartbeat. With the doorbell an enqueue through tidings ends the wait at once, and
    #: this bounds only a message that comes without a ring (a dead worker's, moved back
    #: by dramatiq; an older client's enqueue). Without it, the polling back-off's ceiling:
    #: up to this much publish-to-file latency on an idle queue (set it low, e.g. 20).
    worker_poll_ms: int = Field(default=1000, ge=1, le=60_000)
    #: An enqueue rings its queue's doorbell and an idle consumer waits on it (``BLPOP``)
    #: instead of polling (workers/doorbell.py). Off: dramatiq's polling, for a Redis
    #: proxy without blocking commands (``bench/publish.py`` compares the two).
    worker_doorbell: bool = True
    #: Port of the Prometheus exposition server; ``None`` disables it.
    metrics_port: int | None = None
    #: Address the exposition server binds: loopback unless an operator opens it up.
    metrics_host: str = "127.0.0.1"
    #: Emit logs as JSON lines.
    log_json: bool = True
    #: Level of the long-running commands' logs; routine per-tick lines are DEBUG.
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    @field_validator("log_level", mode="before")
    @classmethod
    def _level_name(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value

    def redis_config(self) -> RedisConfig | None:
        return RedisConfig.from_url(self.redis_url) if self.redis_url else None
