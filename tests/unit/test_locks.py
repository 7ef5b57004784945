"""Resource-scoped flock locks (channels.md C18)."""

from __future__ import annotations

import hashlib
import multiprocessing
import threading
import time
from pathlib import Path

import pytest

from tidings.store import locks
from tidings.store.errors import LockTimeout, UnsafePathError


def test_c18_lock_file_name() -> None:
    digest = hashlib.sha256(b"channel:email").hexdigest()[:20]
    assert locks.lock_file_name("channel:email") == f"channel-email-{digest}.lock"
    assert locks.lock_file_name("resource:hook-registry").startswith("resource-hook-registry-")
    assert locks.lock_file_name("::").startswith("scope-")
    long_scope = "channel:" + "x" * 100
    label = locks.lock_file_name(long_scope).rsplit("-", 1)[0]
    assert len(label) == 48


def test_c18_lock_files_live_under_dot_locks(tmp_path: Path) -> None:
    with locks.hold(tmp_path, "channel:system"):
        pass
    (only,) = (tmp_path / ".notification" / ".locks").iterdir()
    assert only.name == locks.lock_file_name("channel:system")


def test_c18_reentrant_in_one_thread(tmp_path: Path) -> None:
    with locks.hold(tmp_path, "channel:a", "channel:a"), locks.hold(tmp_path, "channel:a"):
        pass


def test_c18_exclusive_between_threads(tmp_path: Path) -> None:
    inside = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with locks.hold(tmp_path, "channel:a"):
            inside.set()
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    inside.wait(5)
    with pytest.raises(LockTimeout):
        with locks.hold(tmp_path, "channel:a", timeout=0.2):
            pass
    with locks.hold(tmp_path, "channel:b", timeout=0.2):
        pass  # an unrelated scope never blocks
    release.set()
    t.join(5)
    with locks.hold(tmp_path, "channel:a", timeout=1):
        pass


def _hold_in_child(
    root: str, ready: multiprocessing.synchronize.Event, done: multiprocessing.synchronize.Event
) -> None:
    with locks.hold(Path(root), "resource:delay-state"):
        ready.set()
        done.wait(10)


def test_c18_exclusive_between_processes(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_hold_in_child, args=(str(tmp_path), ready, done))
    child.start()
    try:
        assert ready.wait(10)
        started = time.monotonic()
        with pytest.raises(LockTimeout):
            with locks.hold(tmp_path, "resource:delay-state", timeout=0.3):
                pass
        assert time.monotonic() - started >= 0.3
    finally:
        done.set()
        child.join(10)
    with locks.hold(tmp_path, "resource:delay-state", timeout=1):
        pass


def test_c18_lock_file_symlink_is_not_followed(tmp_path: Path) -> None:
    lock_dir = tmp_path / ".notification" / ".locks"
    lock_dir.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (lock_dir / locks.lock_file_name("channel:x")).symlink_to(victim)
    with pytest.raises(UnsafePathError, match="is a symlink"):  # C51: typed, names it
        with locks.hold(tmp_path, "channel:x", timeout=0.2):
            pass
    assert victim.read_text() == "keep"
