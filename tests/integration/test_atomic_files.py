"""Readers never see partial JSON (issue 2, acceptance 7; channels.md C16, C19)."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path

from tidings.store.files import atomic_write, safe_read

#: How long the writer rewrites the file once it runs (a spawned child may start slowly).
WRITER_SECONDS = 1.5
#: Rewrites the writer makes at the least, however slow the machine.
MIN_WRITES = 50


def _writer(root: str) -> None:
    n = 0
    stop_at = time.monotonic() + WRITER_SECONDS
    while time.monotonic() < stop_at or n < MIN_WRITES:
        # Sizes vary so a torn write would show as truncated or mixed JSON.
        body = {"n": n, "pad": "x" * (n % 5000), "tail": list(range(n % 300))}
        atomic_write(Path(root), ".notification/system.json", json.dumps(body).encode())
        n += 1


def test_c16_readers_never_see_partial_json(tmp_path: Path) -> None:
    atomic_write(tmp_path, ".notification/system.json", b'{"n": -1}')
    writer = multiprocessing.get_context("spawn").Process(target=_writer, args=(str(tmp_path),))
    writer.start()
    reads = 0
    seen: set[int] = set()
    try:
        while writer.is_alive() or reads == 0:
            outcome = safe_read(tmp_path, ".notification/system.json")
            assert outcome.ok, outcome
            seen.add(json.loads(outcome.data)["n"])
            with open(tmp_path / ".notification" / "system.json", "rb") as plain:
                json.loads(plain.read())
            reads += 1
    finally:
        writer.join(60)
    assert writer.exitcode == 0
    assert reads > 100 and len(seen) > 10
    leftovers = [p.name for p in (tmp_path / ".notification").iterdir() if p.name != "system.json"]
    assert leftovers == []
