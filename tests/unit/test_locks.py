"""Resource locks (channels.md C18)."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from store import locks
from store.errors import LockTimeout


def test_c18_lock_file_names() -> None:
    digest = hashlib.sha256(b"channel:mcp.x").hexdigest()[:20]
    assert locks.lock_file_name("channel:mcp.x") == f"channel-mcp.x-{digest}.lock"
    assert locks.lock_file_name("::").startswith("scope-")
    assert len(locks.lock_file_name("resource:" + "x" * 100).rsplit("-", 1)[0]) == 48


def test_c18_reentrant_and_unrelated_scopes_do_not_block(tmp_path: Path) -> None:
    with locks.hold(tmp_path, "channel:a", "channel:a"), locks.hold(tmp_path, "channel:a"):
        done = threading.Event()

        def other() -> None:
            with locks.hold(tmp_path, "channel:b", timeout=2):
                done.set()

        t = threading.Thread(target=other)
        t.start()
        t.join(5)
        assert done.is_set()
    assert (tmp_path / ".notification" / ".locks").is_dir()


def test_c18_bounded_wait_is_lock_timeout(tmp_path: Path) -> None:
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with locks.hold(tmp_path, "resource:hook-registry"):
            held.set()
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    held.wait(5)
    try:
        with pytest.raises(LockTimeout) as info, locks.hold(
            tmp_path, "resource:hook-registry", timeout=0.1
        ):
            pass
        assert info.value.reason == "lock_timeout"
    finally:
        release.set()
        t.join(5)
