"""What the overview says about the state store: its engine and how durable it is.

Read each time with ``INFO server``, ``INFO persistence`` and ``CONFIG GET appendfsync``
(three constant-time commands). The deployed roles may not run ``CONFIG``
(deploy/redis.conf): the fsync policy is then "not readable", said so, never guessed. A
store that answers no ``INFO`` (the in-memory one) is named by the label it was
served with, when the console knows it (:func:`served_label`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypedDict

from redis import Redis
from redis.exceptions import ResponseError

from tidings.engine import storefile

#: What the in-process store of ``tidings.connect("embedded")`` is called.
EMBEDDED_LABEL = "fakeredis in this process (in memory, not durable)"

#: What each ``appendfsync`` policy keeps (interfaces.md "The default store", What survives).
FSYNC_KEEPS = {
    "always": "an acknowledged write survives a crash and a power failure",
    "everysec": "an acknowledged write survives a crash of the engine; a power failure "
    "may lose the last second",
    "no": "an acknowledged write survives a crash of the engine; a power failure may lose "
    "what the OS had not written yet",
}


#: What an in-memory store keeps.
IN_MEMORY_KEEPS = "nothing survives the process that holds it"


class StoreFacts(TypedDict):
    """The engine (``"valkey 9.1.2"``), its append-only file and fsync policy, and what
    that keeps; ``None`` where the store does not say, with ``note`` saying why."""

    engine: str | None
    aof: bool | None
    fsync: str | None
    #: ``ok``, ``err``: the last write of the append-only file.
    aof_write: str | None
    keeps: str | None
    verdict: Literal["durable", "not_durable", "unknown"]
    note: str | None


def served_label(url: str | None, state_dir: Path) -> str | None:
    """The label of the store at ``url`` when tidings serves it: the embedded store, or
    the store ``tidings up`` serves from ``state_dir`` (its ``store.json``)."""
    if url == "embedded":
        return EMBEDDED_LABEL
    try:
        record = storefile.read(state_dir / storefile.STORE_FILE)
    except storefile.StoreFileError:
        return None
    if record is None or record.get("url") != url:
        return None
    return str(record.get("engine")) if record.get("engine") else None


def _engine(server: dict[str, object]) -> str:
    name = str(server.get("server_name") or "redis")
    version = server.get(f"{name}_version") or server.get("redis_version") or "?"
    return f"{name} {version}"


def read_facts(redis: Redis, label: str | None = None) -> StoreFacts:
    """The facts of the store ``redis`` (``label``: what it was served as, if known)."""
    try:
        server = redis.info("server")
        persistence = redis.info("persistence")
    except ResponseError as exc:
        in_memory = bool(label) and "not durable" in str(label)
        return {
            "engine": label,
            "aof": None,
            "fsync": None,
            "aof_write": None,
            "keeps": IN_MEMORY_KEEPS if in_memory else None,
            "verdict": "not_durable" if in_memory else "unknown",
            "note": None if label else f"the store does not answer INFO ({exc})",
        }
    aof = str(persistence.get("aof_enabled", "0")) == "1"
    fsync, note = None, None
    if aof:
        try:
            fsync = str(redis.config_get("appendfsync").get("appendfsync") or "") or None
        except ResponseError as exc:
            note = f"this user may not read the fsync policy (CONFIG GET: {exc})"
    keeps = (
        FSYNC_KEEPS.get(fsync or "")
        if aof
        else "no append-only file: a restart loses every write since the last snapshot"
    )
    return {
        "engine": _engine(server),
        "aof": aof,
        "fsync": fsync,
        "aof_write": str(persistence["aof_last_write_status"])
        if "aof_last_write_status" in persistence
        else None,
        "keeps": keeps,
        "verdict": "durable" if aof else "not_durable",
        "note": note,
    }
