"""The checkpoint record (memory-inbox.md M14, M21)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.gitrepo import GitRepo
from tidings.jobs.memory import Snapshot, decode_checkpoint, encode_checkpoint
from tidings.jobs.memory import checkpoint as memory_checkpoint
from tidings.jobs.memory.checkpoint import FIELDS
from tidings.jobs.memory.model import (
    HeadState,
    Identity,
    IndexEntry,
    PathRecord,
    TooNew,
    TreeEntry,
    Unreadable,
    Worktree,
)

ID = "ab" * 20


def record(**fields: object) -> PathRecord:
    base: dict[str, object] = {
        "flags": 256,
        "head": TreeEntry(0o100644, ID),
        "index": (IndexEntry(0, 0o100644, ID),),
        "worktree": Worktree("file", 0o100644, "cd" * 20),
        "stat": (1, 2, 3, 4, 5),
    }
    return PathRecord(**{**base, **fields})  # type: ignore[arg-type]


def snapshot(paths: dict[bytes, PathRecord]) -> Snapshot:
    return Snapshot(
        Identity("/m", "1:2", None),
        HeadState("main", False, True, None),
        paths,
        0,
        None,
        "2025-01-01T00:00:00.000Z",
        123,
    )


def as_redis(fields: dict[str, str]) -> dict[bytes, bytes]:
    return {k.encode(): v.encode() for k, v in fields.items()}


def test_fields_are_json_values() -> None:
    """M14: one hash field per name, each value JSON; format 1, version as given."""
    fields = encode_checkpoint(snapshot({}), 41)
    assert tuple(fields) == FIELDS
    values = {name: json.loads(text) for name, text in fields.items()}
    assert values["format"] == 1 and values["version"] == 41
    assert values["identity"] == {"root": "/m", "git_dir": "1:2", "root_commit": None}
    assert values["head"] == {"branch": "main", "detached": False, "unborn": True, "head": None}


def test_round_trip_keeps_raw_paths_and_records() -> None:
    """M14, M25: raw path bytes (non-UTF-8 included) survive encode/decode."""
    paths = {
        b"n\xffo.md": record(),
        b"conflict.md": record(
            index=tuple(IndexEntry(s, 0o100644, ID) for s in (1, 2, 3)), flags=32768
        ),
        b"gone.md": record(worktree=Worktree("absent", 0, None), stat=None, head=None),
    }
    original = snapshot(paths)
    assert decode_checkpoint(as_redis(encode_checkpoint(original, 1))) == original
    assert decode_checkpoint(encode_checkpoint(original, 1)) == original  # str keys too


def test_real_observation_round_trips(tmp_path: Path) -> None:
    """M14: a real observation decodes to an equal snapshot."""
    repo = GitRepo.init(tmp_path / "m")
    repo.write("a.md", "a")
    repo.commit()
    repo.write(b"b\xfe.md", "b")
    observed = repo.observe()
    assert decode_checkpoint(as_redis(encode_checkpoint(observed, 3))) == observed


def test_no_checkpoint() -> None:
    """M28: absent or empty hash: no checkpoint."""
    assert decode_checkpoint(None) is None
    assert decode_checkpoint({}) is None


def corrupt(name: str, value: str) -> dict[str, str]:
    fields = encode_checkpoint(snapshot({b"a.md": record()}), 1)
    fields[name] = value
    return fields


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("paths", "not json"),
        ("paths", json.dumps([["YS5tZA==", 256, None, [], ["file", 1, None]]])),  # short row
        ("paths", json.dumps([["%%%", 256, None, [], ["file", 1, None], None]])),  # not base64
        (
            "paths",
            json.dumps([["YS5tZA==", 1, None, [], ["file", 1, None], None]] * 2),
        ),  # duplicate
        ("paths", json.dumps([["YS5tZA==", 1, None, [], ["socket", 1, None], None]])),
        ("head", json.dumps({"branch": "main", "detached": 0, "unborn": False, "head": None})),
        ("head", json.dumps({"branch": "main", "detached": False, "unborn": False, "head": "xyz"})),
        ("identity", json.dumps({"root": "/m"})),
        ("version", json.dumps("7")),
        ("started_ns", json.dumps(True)),
        ("format", json.dumps(0)),
        ("observed_at", json.dumps(None)),
    ],
)
def test_mistyped_fields_are_unreadable(name: str, value: str) -> None:
    """M21: unparseable or mistyped fields: unreadable (M28 reobserves)."""
    state = decode_checkpoint(corrupt(name, value))
    assert isinstance(state, Unreadable), state


def test_missing_field_is_unreadable() -> None:
    """M21."""
    fields = encode_checkpoint(snapshot({}), 1)
    del fields["overflow_digest"]
    assert isinstance(decode_checkpoint(fields), Unreadable)


def test_more_than_20000_paths_is_unreadable() -> None:
    """M21: more than 20,000 paths."""
    rows = [
        [f"{i:08d}".encode().hex(), 128, None, [], ["absent", 0, None], None] for i in range(20_001)
    ]
    state = decode_checkpoint(corrupt("paths", json.dumps(rows)))
    assert isinstance(state, Unreadable) and "20000" in state.reason


def test_newer_format_is_too_new() -> None:
    """M21: a format above 1 is left alone: TooNew, whatever the other fields hold."""
    fields = {"format": "2", "paths": "whatever the future holds"}
    assert decode_checkpoint(fields) == TooNew(2)


def test_identical_fields_reuse_the_decoded_snapshot() -> None:
    """M21: the same field values give the same (immutable) snapshot without decoding
    again; any differing value, or a corrupt one, is decoded afresh."""
    fields = as_redis(encode_checkpoint(snapshot({b"a.md": record()}), 7))
    first = decode_checkpoint(fields)
    assert decode_checkpoint(dict(fields)) is first
    bumped = {**fields, b"version": b"8"}
    again = decode_checkpoint(bumped)
    assert again is not first and again == first
    assert isinstance(decode_checkpoint({**bumped, b"paths": b"[1]"}), Unreadable)
    assert decode_checkpoint(bumped) is again


def test_kept_decoded_snapshots_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decoded snapshots are kept per repository, within a budget of paths."""
    monkeypatch.setattr(memory_checkpoint, "KEPT_DECODED_PATHS", 5)
    monkeypatch.setattr(memory_checkpoint, "_decoded", {})
    for n in range(4):
        state = Snapshot(
            Identity(f"/m{n}", "1:2", None),
            HeadState("main", False, True, None),
            {b"a.md": record(), b"b.md": record()},
            0,
            None,
            "2025-01-01T00:00:00.000Z",
            1,
        )
        decode_checkpoint(encode_checkpoint(state, 1))
    kept = memory_checkpoint._decoded
    assert len(kept) == 1 and next(iter(kept.values()))[1].identity.root == "/m3"
