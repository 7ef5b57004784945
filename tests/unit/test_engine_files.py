"""The default store's files (issue 20; interfaces.md "The default store"): store.json is never
trusted blindly, the password is generated once and kept, the configuration is AOF on
loopback with protected mode, the engine's version is checked."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tidings.engine import config, storefile
from tidings.engine.binary import EngineUnavailable, identify
from tidings.engine.dir_locks import FileLock
from tidings.engine.state_paths import StatePaths


def test_store_json_is_0600_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "store.json"
    storefile.write(path, {"url": "redis://:pw@127.0.0.1:6390/0", "pid": os.getpid()})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert storefile.find_url(tmp_path) == "redis://:pw@127.0.0.1:6390/0"


def test_a_dead_pid_makes_store_json_stale(tmp_path: Path) -> None:
    storefile.write(tmp_path / "store.json", {"url": "redis://x", "pid": 2**22 + 1})
    assert storefile.find_url(tmp_path) is None


@pytest.mark.parametrize("text", ["not json", "[]", '{"pid": 1}', '{"url": 5, "pid": 1}'])
def test_a_malformed_store_json_is_no_store(tmp_path: Path, text: str) -> None:
    path = tmp_path / "store.json"
    path.write_text(text)
    path.chmod(0o600)
    assert storefile.find_url(tmp_path) is None


def test_a_store_json_others_can_read_is_refused(tmp_path: Path) -> None:
    storefile.write(tmp_path / "store.json", {"url": "redis://x", "pid": os.getpid()})
    (tmp_path / "store.json").chmod(0o644)
    with pytest.raises(storefile.StoreFileError, match="readable by others"):
        storefile.find_url(tmp_path)


def test_a_symlinked_store_json_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    storefile.write(target, {"url": "redis://x", "pid": os.getpid()})
    (tmp_path / "store.json").symlink_to(target)
    with pytest.raises(storefile.StoreFileError):
        storefile.find_url(tmp_path)


def test_the_password_is_generated_once_and_kept(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path)
    paths.create()
    first = config.password(paths)
    assert len(first) == 2 * config.PASSWORD_BYTES and config.password(paths) == first
    assert stat.S_IMODE(paths.password.stat().st_mode) == 0o600
    assert stat.S_IMODE(paths.root.stat().st_mode) == 0o700


def test_the_configuration(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path)
    text = config.render(paths, 6390, "s3cret", "always")
    lines = set(text.splitlines())
    assert {
        "appendonly yes",
        "appendfsync always",
        "bind 127.0.0.1",
        "port 6390",
        "protected-mode yes",
        "daemonize no",
        'requirepass "s3cret"',
        f'dir "{paths.data_dir}"',
        "unixsocketperm 700",
    } <= lines
    paths.create()
    config.write(paths, text)
    assert stat.S_IMODE(paths.config.stat().st_mode) == 0o600


def test_a_socket_path_too_long_for_the_kernel_is_left_out(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / ("x" * 120))
    assert paths.socket is None
    assert "unixsocket" not in config.render(paths, 1, "s", "everysec")


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        ("Redis server v=6.2.14 sha=0", "7.0 or newer"),
        ("something else", "is not a valkey-server"),
    ],
)
def test_an_old_or_unknown_engine_is_refused(tmp_path: Path, output: str, problem: str) -> None:
    fake = tmp_path / "server"
    fake.write_text(f"#!/bin/sh\necho '{output}'\n")
    fake.chmod(0o755)
    with pytest.raises(EngineUnavailable, match=problem):
        identify(str(fake))


def test_identify_names_the_engine(tmp_path: Path) -> None:
    fake = tmp_path / "server"
    fake.write_text("#!/bin/sh\necho 'Valkey server v=9.1.2 sha=0 malloc=libc bits=64'\n")
    fake.chmod(0o755)
    assert identify(str(fake)).label == "valkey 9.1.2"


def test_a_held_lock_is_busy_until_let_go(tmp_path: Path) -> None:
    held, other = FileLock(tmp_path / "l"), FileLock(tmp_path / "l")
    assert held.acquire()
    held.note_pid()
    assert not other.acquire() and other.holder() == str(os.getpid())
    held.release()
    assert other.is_free()
