"""JSON text forms and timestamps used by every file tidings writes (channels.md C17)."""

from __future__ import annotations

import hashlib
import json
import time


def compact(value: object) -> str:
    """Channel files, mini-files, reports: compact, non-ASCII kept, key order kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def for_model(value: object) -> str:
    """What tidings hands a model as text (MCP tool results and resources): compact and
    non-ASCII kept, the fewest tokens for the same JSON; a value holding a lone surrogate
    (no UTF-8 form) has it escaped instead, so the text can always be sent."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"))
    return text


def compact_sorted(value: object) -> str:
    """Control records and delay files: compact with sorted keys."""
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
    )


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def utc_stamp(epoch: float) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def utc_stamp_ms(epoch: float) -> str:
    """ISO-8601 UTC with milliseconds, ``Z`` suffix (inbox timestamps)."""
    whole = int(epoch)
    millis = round((epoch - whole) * 1000)
    if millis == 1000:
        whole, millis = whole + 1, 0
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"
