"""Capped attention lanes remembered by content (block-cap.md B20).

The capped lane is a function of the lane, the cap and the spill outcome (B20),
and a stable observation's channel payloads are a function of its raw
fingerprint (file names, sizes and sha256, channels.md C20). So a render whose
fingerprint, cap and derived entries (the daemon aggregate and sanitised pointers,
given by their ruler text) match an earlier one gets that capped lane again —
as fresh objects — provided its spill file is still the verified one (one
``lstat``). Re-rendering an unchanged oversized lane every turn thus skips the
ruler, the digest and the compaction. Lanes whose spill failed are not kept, so
the spill is retried.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path

from tidings.jobs.cap import spill
from tidings.jobs.cap.attention import Lane

#: Capped lanes kept per process.
MEMO_SIZE = 256


@dataclass(frozen=True)
class _Capped:
    text: str
    spill_name: str
    digest: str


class LaneMemo:
    def __init__(self, size: int = MEMO_SIZE) -> None:
        self._size = size
        self._items: OrderedDict[Hashable, _Capped] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, root: Path, key: Hashable) -> Lane | None:
        with self._lock:
            entry = self._items.get(key)
            if entry is not None:
                self._items.move_to_end(key)
        if entry is None or not spill.still_verified(root, entry.spill_name, entry.digest):
            return None
        lane: Lane = json.loads(entry.text)
        return lane

    def put(self, key: Hashable, lane: Lane, digest: str, outcome: spill.Spill) -> None:
        if outcome.name is None:
            return
        try:
            text = json.dumps(lane, ensure_ascii=False)
        except (TypeError, ValueError):
            return  # not plain JSON (a caller's own objects): not remembered
        with self._lock:
            self._items[key] = _Capped(text, outcome.name, digest)
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


memo = LaneMemo()
