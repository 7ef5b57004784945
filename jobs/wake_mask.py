"""The masked wake fingerprint (channels.md C25).

An ordinary delayed target is already left out of the raw fingerprint by the
coherent read. This branch adds the token that wins over every other: while
``daemon`` is the live delay target its wake entry is ``daemon:delayed=1``
(delay.md D1). The threshold tokens (``daemon:alarm=…``) belong to the daemon
aggregate's branch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jobs.names import DAEMON

DAEMON_ENTRY = f"{DAEMON}.json"
#: C25: the wake token of a delayed daemon channel.
DELAYED_TOKEN = "daemon:delayed=1"


def masked_fingerprint(root: Path, raw: list[list[Any]], delayed: str | None) -> list[list[Any]]:
    masked = [list(entry) for entry in raw]
    if delayed == DAEMON:
        masked = [entry for entry in masked if entry[0] != DAEMON_ENTRY]
        masked.append([DAEMON_ENTRY, 0, DELAYED_TOKEN])
        masked.sort(key=lambda entry: str(entry[0]))
    return masked
