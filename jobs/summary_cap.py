"""Small text helpers every capability shares: the summary cap (memory-inbox.md M37)."""

from __future__ import annotations

#: M37: the summary cap in UTF-8 bytes, marker included.
SUMMARY_BYTES = 4096
TRUNCATION_MARK = "\n…(truncated)"


def cap(text: str) -> str:
    """M37: at most SUMMARY_BYTES UTF-8 bytes; a longer text is cut on a code-point
    boundary and ends with the truncation marker."""
    data = text.encode("utf-8")
    if len(data) <= SUMMARY_BYTES:
        return text
    room = SUMMARY_BYTES - len(TRUNCATION_MARK.encode("utf-8"))
    return data[:room].decode("utf-8", "ignore") + TRUNCATION_MARK
