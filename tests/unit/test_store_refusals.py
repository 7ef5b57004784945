"""Issue 30: a store's own refusal is answered with its reason, never internal_error
(interfaces.md, The default store: Faults of the state directory; Lifecycle)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import redis

from tidings.cli.check_aof import command_files
from tidings.engine import disk
from tidings.jobs.guard import answering, raising
from tidings.store.errors import TidingsError

MISCONF = "MISCONF Errors writing to the AOF file: No space left on device"


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (redis.ResponseError(MISCONF), "store_refuses_writes"),
        (redis.TimeoutError("Timeout reading from 127.0.0.1:6390"), "store_unresponsive"),
        (redis.ResponseError("ERR something else"), "internal_error"),
    ],
)
def test_guarded_calls_name_the_store_refusal(exc: Exception, reason: str) -> None:
    def failing() -> dict[str, object]:
        raise exc

    answer = answering("publish_event")(failing)()
    assert answer["status"] == "error" and answer["reason"] == reason
    with pytest.raises(TidingsError) as raised:
        raising("snapshot")(failing)()
    assert raised.value.reason == reason


def test_the_disk_probe_names_full_and_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert disk.probe(tmp_path) is None and list(tmp_path.iterdir()) == []
    for code, reason in ((errno.ENOSPC, "state_dir_full"), (errno.EROFS, "state_dir_read_only")):

        def refuse(*_: object, code: int = code) -> int:
            raise OSError(code, os.strerror(code))

        monkeypatch.setattr("os.write", refuse)
        fault = disk.probe(tmp_path)
        assert fault is not None and fault[0] == reason and str(tmp_path) in fault[1]
        monkeypatch.undo()


def test_check_aof_checks_the_command_files_the_manifest_lists(tmp_path: Path) -> None:
    """Not the RDB base: Valkey 9.1's checker calls its own VALKEY preamble invalid."""
    manifest = tmp_path / "appendonly.aof.manifest"
    manifest.write_text(
        "file appendonly.aof.3.base.rdb seq 3 type b\n"
        "file appendonly.aof.2.incr.aof seq 2 type h\n"
        "file appendonly.aof.4.incr.aof seq 4 type i\n"
        "file appendonly.aof.5.incr.aof seq 5 type i\n"
    )
    assert [p.name for p in command_files(manifest)] == [
        "appendonly.aof.4.incr.aof",
        "appendonly.aof.5.incr.aof",
    ]
