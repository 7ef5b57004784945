"""The checkpoint record: one Redis hash, one JSON value per field (M14, M21).

Paths are stored as base64 of their raw bytes, so any file name survives the
round trip; every id is lowercase hex. Decoding is strict: a missing or
mistyped field, or more than MAX_PATHS paths, makes the checkpoint unreadable.

Decoding costs about 12 µs per path (JSON, validation, records) and most
observations find the checkpoint they decoded last time, so the latest decoded
snapshot of each repository is kept and returned again for identical field
values (compared in full; snapshots are immutable).
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from tidings.jobs.memory.model import (
    CHECKPOINT_FORMAT,
    MAX_PATHS,
    CheckpointState,
    HeadState,
    Identity,
    IndexEntry,
    PathRecord,
    Snapshot,
    TooNew,
    TreeEntry,
    Unreadable,
    Worktree,
)
from tidings.store import replies
from tidings.store.jsonread import MAX_DEPTH, too_deep

FIELDS = (
    "format",
    "version",
    "identity",
    "head",
    "paths",
    "overflow_count",
    "overflow_digest",
    "observed_at",
    "started_ns",
)

ObjectId = Annotated[str, Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")]
Count = Annotated[int, Field(ge=0)]
_Type = Literal["file", "symlink", "gitlink", "directory", "other", "absent"]
_PathRow = tuple[
    str,
    Count,
    tuple[Count, ObjectId] | None,
    list[tuple[Annotated[int, Field(ge=0, le=3)], Count, ObjectId]],
    tuple[_Type, Count, ObjectId | None],
    tuple[int, int, int, int, int] | None,
]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class _Identity(_Strict):
    root: str
    git_dir: str
    root_commit: ObjectId | None


class _Head(_Strict):
    branch: str | None
    detached: bool
    unborn: bool
    head: ObjectId | None


_FIELD_TYPES: dict[str, TypeAdapter[Any]] = {
    "format": TypeAdapter(int),
    "version": TypeAdapter(Count),
    "identity": TypeAdapter(_Identity),
    "head": TypeAdapter(_Head),
    "paths": TypeAdapter(list[_PathRow]),
    "overflow_count": TypeAdapter(Count),
    "overflow_digest": TypeAdapter(Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None),
    "observed_at": TypeAdapter(str),
    "started_ns": TypeAdapter(Count),
}


#: Fields that may hold names Git keeps as raw bytes (a branch, the work tree's path):
#: undecodable bytes travel as lone-surrogate escapes, which the standard JSON parser
#: reads back and pydantic's own JSON parser refuses (M26).
_TEXT_FIELDS = frozenset({"identity", "head"})


def _dumps(value: object) -> str:
    # ASCII escapes keep odd branch names (lone surrogates) encodable for Redis.
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def encode_checkpoint(snapshot: Snapshot, version: int) -> dict[str, str]:
    """M14: the checkpoint hash fields for ``snapshot`` at ``version``."""
    ident, head = snapshot.identity, snapshot.head
    values: dict[str, object] = {
        "format": CHECKPOINT_FORMAT,
        "version": version,
        "identity": {
            "root": ident.root,
            "git_dir": ident.git_dir,
            "root_commit": ident.root_commit,
        },
        "head": {
            "branch": head.branch,
            "detached": head.detached,
            "unborn": head.unborn,
            "head": head.head,
        },
        "paths": [_path_row(raw, rec) for raw, rec in sorted(snapshot.paths.items())],
        "overflow_count": snapshot.overflow_count,
        "overflow_digest": snapshot.overflow_digest,
        "observed_at": snapshot.observed_at,
        "started_ns": snapshot.started_ns,
    }
    return {name: _dumps(values[name]) for name in FIELDS}


def _path_row(raw: bytes, rec: PathRecord) -> list[object]:
    return [
        base64.b64encode(raw).decode("ascii"),
        rec.flags,
        None if rec.head is None else [rec.head.mode, rec.head.id],
        [[e.stage, e.mode, e.id] for e in rec.index],
        [rec.worktree.type, rec.worktree.mode, rec.worktree.id],
        None if rec.stat is None else list(rec.stat),
    ]


#: Paths of the decoded snapshots kept for reuse, all repositories together.
KEPT_DECODED_PATHS = MAX_PATHS

Fields = dict[str, bytes | str]
_decoded: dict[bytes | str, tuple[Fields, Snapshot]] = {}  # by identity field, oldest first
_decoded_lock = threading.Lock()


def decode_checkpoint(fields: Mapping[bytes | str, bytes | str] | None) -> CheckpointState | None:
    """M21: ``None`` when there is no checkpoint, else a Snapshot, Unreadable or TooNew."""
    if not fields:
        return None
    text = {replies.text(key): value for key, value in fields.items()}
    key = text.get("identity", "")
    with _decoded_lock:
        kept = _decoded.get(key)
    if kept is not None and kept[0] == text:
        return kept[1]
    state = _decode(text)
    if isinstance(state, Snapshot):
        _keep(key, text, state)
    return state


def remember(fields: Mapping[str, str], snapshot: Snapshot) -> None:
    """Keep ``snapshot`` as the decoding of the checkpoint fields just written for it, so
    the next read of the same fields (a turn's reconcile after its pre-turn observation)
    decodes nothing. Fields read later are compared with these in full, as Redis
    returns them (bytes); any difference decodes them as usual."""
    text: Fields = {name: value.encode("utf-8") for name, value in fields.items()}
    _keep(text["identity"], text, snapshot)


def _keep(key: bytes | str, text: Fields, state: Snapshot) -> None:
    with _decoded_lock:
        _decoded.pop(key, None)
        _decoded[key] = (text, state)
        kept = sum(len(snapshot.paths) + 1 for _, snapshot in _decoded.values())
        for oldest in list(_decoded):
            if kept <= KEPT_DECODED_PATHS or oldest == key:
                break
            kept -= len(_decoded.pop(oldest)[1].paths) + 1


def _decode(text: Fields) -> CheckpointState:
    try:
        values = {name: _parse(name, text) for name in FIELDS}
        if len(values["paths"]) > MAX_PATHS:
            return Unreadable(f"more than {MAX_PATHS} paths")
        paths = _paths(values["paths"])
    except _TooNew as exc:
        return TooNew(exc.format)
    except ValueError as exc:  # pydantic's ValidationError included
        return Unreadable(_reason(exc))
    ident: _Identity = values["identity"]
    head: _Head = values["head"]
    return Snapshot(
        identity=Identity(ident.root, ident.git_dir, ident.root_commit),
        head=HeadState(head.branch, head.detached, head.unborn, head.head),
        paths=paths,
        overflow_count=values["overflow_count"],
        overflow_digest=values["overflow_digest"],
        observed_at=values["observed_at"],
        started_ns=values["started_ns"],
    )


class _TooNew(Exception):
    def __init__(self, fmt: int) -> None:
        super().__init__(fmt)
        self.format = fmt


def _parse(name: str, text: dict[str, bytes | str]) -> Any:
    if name not in text:
        raise ValueError(f"missing field {name}")
    raw = text[name]
    if too_deep(raw.encode("utf-8", "replace") if isinstance(raw, str) else raw):
        raise ValueError(f"field {name} is nested deeper than {MAX_DEPTH} levels")  # C47
    if name in _TEXT_FIELDS:
        value = _FIELD_TYPES[name].validate_python(_loads(raw), strict=True)
    else:
        value = _FIELD_TYPES[name].validate_json(raw, strict=True)
    if name == "format":
        if value > CHECKPOINT_FORMAT:
            raise _TooNew(value)
        if value < CHECKPOINT_FORMAT:
            raise ValueError(f"unknown format {value}")
    return value


def _loads(value: bytes | str) -> object:
    try:
        return json.loads(value)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"invalid JSON: {exc}") from None


def _paths(rows: list[_PathRow]) -> dict[bytes, PathRecord]:
    paths: dict[bytes, PathRecord] = {}
    for row in rows:
        raw, record = _record(row)
        if not raw or raw in paths:
            raise ValueError("empty or duplicate path")
        paths[raw] = record
    return paths


def _record(row: _PathRow) -> tuple[bytes, PathRecord]:
    path, flags, head, index, worktree, stat = row
    try:
        raw = base64.b64decode(path, validate=True)
    except binascii.Error:
        raise ValueError("path is not base64") from None
    return raw, PathRecord(
        flags=flags,
        head=None if head is None else TreeEntry(*head),
        index=tuple(IndexEntry(*entry) for entry in index),
        worktree=Worktree(*worktree),
        stat=stat,
    )


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"invalid checkpoint: {first['type']} at {'.'.join(map(str, first['loc']))}"
    return f"invalid checkpoint: {exc}"
