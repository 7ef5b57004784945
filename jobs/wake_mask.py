"""The masked wake fingerprint (channels.md C25). Foundation state: masked = raw."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def masked_fingerprint(root: Path, raw: list[list[Any]], delayed: str | None) -> list[list[Any]]:
    return [list(entry) for entry in raw]
