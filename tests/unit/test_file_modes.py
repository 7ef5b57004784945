"""Workdir files tidings creates take the permission bits of the directory they are in,
never wider than the umask allows (issue 24; interfaces.md "Local trust")."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidings.store.files import atomic_write, exclusive_create
from tidings.store.locks import LOCK_DIR, hold


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def umask() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("umask")
@pytest.mark.parametrize(
    ("dir_bits", "file_bits"),
    [
        (0o700, 0o600),
        (0o750, 0o640),
        (0o755, 0o644),
        (0o777, 0o644),
        (0o711, 0o600),
    ],
)
def test_files_take_the_directory_bits(tmp_path: Path, dir_bits: int, file_bits: int) -> None:
    notification = tmp_path / ".notification"
    notification.mkdir()
    notification.chmod(dir_bits)
    atomic_write(tmp_path, ".notification/system.json", b"{}")
    exclusive_create(tmp_path, ".notification/spill.txt", b"x")
    assert mode(notification / "system.json") == file_bits
    assert mode(notification / "spill.txt") == file_bits


@pytest.mark.usefixtures("umask")
def test_created_directories_and_lock_files_follow_the_workdir(tmp_path: Path) -> None:
    workdir = tmp_path / "agent"
    workdir.mkdir()
    workdir.chmod(0o700)
    atomic_write(workdir, ".notification/daemon/run.json", b"{}")
    assert mode(workdir / ".notification") == 0o700
    assert mode(workdir / ".notification" / "daemon") == 0o700
    assert mode(workdir / ".notification" / "daemon" / "run.json") == 0o600
    with hold(workdir, "resource:x"):
        locks = list((workdir / LOCK_DIR).iterdir())
    assert [mode(p) for p in locks] == [0o600]


def test_the_umask_still_narrows(tmp_path: Path) -> None:
    previous = os.umask(0o077)
    try:
        tmp_path.chmod(0o755)
        atomic_write(tmp_path, "mirror.json", b"{}")
    finally:
        os.umask(previous)
    assert mode(tmp_path / "mirror.json") == 0o600
