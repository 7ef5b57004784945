"""Reading one channel file of a workdir: its fingerprint entry and its payload (C8, C20, C21).

The lowest reading helpers: no allowlist, no delay, no daemon aggregate. Readers
above (the coherent read, delay statistics) compose them.
"""

from __future__ import annotations

from pathlib import Path

from tidings.store.files import safe_read
from tidings.store.jsonfmt import sha256_hex
from tidings.store.jsonread import Parsed, parse

#: The folder of channel files inside a workdir.
NOTIFICATION_DIR = ".notification"

#: One fingerprint entry as committed (JSON): ``[filename, byte_size, sha256_hex]``.
FpEntry = list[object]
#: One fingerprint entry as just read from disk.
FileStat = tuple[str, int, str]


def parse_payload(data: bytes) -> dict[str, object] | None:
    """C8/C21: an object as is, another JSON value as ``{"data": value}``, else ``None``
    (malformed, C47 too deep included; lone surrogates read as U+FFFD, C48)."""
    parsed = parse(data)
    if not isinstance(parsed, Parsed):
        return None
    value = parsed.value
    return value if isinstance(value, dict) else {"data": value}


def channel_file_stat(
    root: Path, channel: str
) -> tuple[FileStat | None, dict[str, object] | None, str | None]:
    """One channel file's fingerprint entry, payload and read problem (``None`` each if absent)."""
    outcome = safe_read(root, f"{NOTIFICATION_DIR}/{channel}.json")
    if outcome.kind == "absent":
        return None, None, None
    if not outcome.ok:
        return None, None, outcome.error
    entry = (f"{channel}.json", len(outcome.data), sha256_hex(outcome.data))
    return entry, parse_payload(outcome.data), None
