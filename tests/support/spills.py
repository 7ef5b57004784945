"""Test doubles for the block cap's spill writers."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from tidings.jobs.cap import spill, spill_persistent


class MemorySpillIndex:
    """The persistent spill index (block-cap.md B11) in a dict, for tests without Redis."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def known(self, digest: str) -> str | None:
        return self.names.get(digest)

    def remember(self, digest: str, name: str) -> None:
        self.names[digest] = name


def attention_spiller(root: Path) -> spill.Spiller:
    return partial(spill.spill_attention, root)


def persistent_spiller(
    root: Path, index: spill_persistent.SpillIndex | None = None, now: float = 1_700_000_000.0
) -> spill.Spiller:
    return partial(
        spill_persistent.spill_persistent, root, index=index or MemorySpillIndex(), now=now
    )


def spill_files(root: Path) -> list[str]:
    logs = root / "logs"
    return sorted(p.name for p in logs.iterdir()) if logs.is_dir() else []
