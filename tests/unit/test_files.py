"""Workdir file primitives (channels.md C16, C17, C19; block-cap.md B9)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from tidings.store import files
from tidings.store.errors import UnsafePathError


def test_c16_atomic_write_creates_parents_and_leaves_no_temp(tmp_path: Path) -> None:
    files.atomic_write(tmp_path, ".notification/sub/x.json", b"{}")
    assert (tmp_path / ".notification" / "sub" / "x.json").read_bytes() == b"{}"
    assert os.listdir(tmp_path / ".notification" / "sub") == ["x.json"]


def test_c16_temp_name_and_exclusive_create(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    real_open = os.open

    def spy(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if isinstance(path, str) and path.endswith(".tmp"):
            seen.append(path)
            assert flags & os.O_EXCL and flags & os.O_NOFOLLOW
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    files.atomic_write(tmp_path, ".notification/system.json", b"{}")
    assert len(seen) == 1
    assert re.fullmatch(rf"\.system\.json\.{os.getpid()}\.[0-9a-f]{{32}}\.tmp", seen[0])


def test_c16_failed_write_removes_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_replace(*args: Any, **kwargs: Any) -> None:
        raise OSError("no space")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        files.atomic_write(tmp_path, ".notification/system.json", b"{}")
    assert os.listdir(tmp_path / ".notification") == []


@pytest.mark.parametrize("link", [".notification", ".notification/system.json"])
def test_c16_symlinks_refused_and_left_untouched(tmp_path: Path, link: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "w"
    (root / ".notification").mkdir(parents=True, exist_ok=True)
    target = tmp_path / "outside" / "target.json"
    target.write_text("keep")
    if link == ".notification":
        (root / ".notification").rmdir()
        (root / ".notification").symlink_to(outside)
    else:
        (root / link).symlink_to(target)
    with pytest.raises(UnsafePathError):
        files.atomic_write(root, ".notification/system.json", b"{}")
    assert target.read_text() == "keep"
    assert os.path.islink(root / link)
    assert sorted(os.listdir(outside)) == ["target.json"]


def test_c16_a_staged_write_shows_nothing_until_its_commit(tmp_path: Path) -> None:
    """Issue 33, delay.md D11: the temp is created and written at once; the target
    changes only at the commit; another write can run in between."""
    files.atomic_write(tmp_path, ".notification/alarm.json", b"old")
    d = tmp_path / ".notification"
    with files.staged_write(tmp_path, ".notification/alarm.json", b"new") as staged:
        (temp,) = (n for n in os.listdir(d) if n.endswith(".tmp"))
        assert (d / temp).read_bytes() == b"new"
        assert (d / "alarm.json").read_bytes() == b"old"
        files.atomic_write(tmp_path, ".notification/state.json", b"expiring")
        assert (d / "alarm.json").read_bytes() == b"old"
        staged.commit()
        assert (d / "alarm.json").read_bytes() == b"new"
    assert sorted(os.listdir(d)) == ["alarm.json", "state.json"]


def test_c16_a_staged_write_left_uncommitted_leaves_no_temp(tmp_path: Path) -> None:
    files.atomic_write(tmp_path, ".notification/alarm.json", b"old")
    with (
        pytest.raises(KeyboardInterrupt),
        files.staged_write(tmp_path, ".notification/alarm.json", b"new"),
    ):
        raise KeyboardInterrupt
    with files.staged_write(tmp_path, ".notification/alarm.json", b"unused"):
        pass
    assert os.listdir(tmp_path / ".notification") == ["alarm.json"]
    assert (tmp_path / ".notification/alarm.json").read_bytes() == b"old"


def test_c16_a_target_that_became_a_symlink_is_refused_at_the_commit(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("keep")
    (tmp_path / ".notification").mkdir()
    with files.staged_write(tmp_path, ".notification/alarm.json", b"new") as staged:
        (tmp_path / ".notification/alarm.json").symlink_to(outside)
        with pytest.raises(UnsafePathError):
            staged.commit()
    assert outside.read_text() == "keep"
    assert os.path.islink(tmp_path / ".notification/alarm.json")
    assert os.listdir(tmp_path / ".notification") == ["alarm.json"]


def test_c19_safe_read_kinds(tmp_path: Path) -> None:
    d = tmp_path / ".notification"
    d.mkdir()
    (d / "ok.json").write_bytes(b"{}")
    (d / "big.json").write_bytes(b" " * (files.MAX_READ_BYTES + 1))
    (d / "dir.json").mkdir()
    (d / "link.json").symlink_to(d / "ok.json")
    assert files.safe_read(tmp_path, ".notification/ok.json").kind == "ok"
    assert files.safe_read(tmp_path, ".notification/missing.json").kind == "absent"
    assert files.safe_read(tmp_path, ".notification/big.json").kind == "too_large"
    assert files.safe_read(tmp_path, ".notification/dir.json").kind == "not_regular"
    assert files.safe_read(tmp_path, ".notification/link.json").kind == "not_regular"
    exact = d / "exact.json"
    exact.write_bytes(b" " * files.MAX_READ_BYTES)
    assert files.safe_read(tmp_path, ".notification/exact.json").kind == "ok"


def test_c19_safe_read_never_follows_a_linked_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "system.json").write_text("{}")
    root = tmp_path / "w"
    root.mkdir()
    (root / ".notification").symlink_to(outside)
    assert files.safe_read(root, ".notification/system.json").kind == "not_regular"
    assert files.list_dir(root, ".notification") is None


def test_b9_exclusive_create(tmp_path: Path) -> None:
    assert files.exclusive_create(tmp_path, "logs/a.json", b"one") is True
    assert files.exclusive_create(tmp_path, "logs/a.json", b"two") is False
    assert (tmp_path / "logs" / "a.json").read_bytes() == b"one"
    assert os.listdir(tmp_path / "logs") == ["a.json"]


def test_remove_file(tmp_path: Path) -> None:
    files.atomic_write(tmp_path, ".notification/x.json", b"{}")
    assert files.remove_file(tmp_path, ".notification/x.json") is True
    assert files.remove_file(tmp_path, ".notification/x.json") is False
