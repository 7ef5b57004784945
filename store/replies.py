"""Redis replies as Python text: the one bytes-to-str helper.

tidings' clients answer raw bytes (RESP2, ``decode_responses`` off); a client built
with ``decode_responses=True`` answers str. Either way callers get ``str``. Bytes that
are not UTF-8 (corrupt or hostile state) decode with U+FFFD instead of raising, so a
bad value is reported where it is parsed, not by a crash here.
"""

from __future__ import annotations


def text(raw: object) -> str:
    """``raw`` (bytes, str or a number from a reply) as str."""
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "replace")
    return raw if isinstance(raw, str) else str(raw)


def text_or_none(raw: object) -> str | None:
    """:func:`text`, keeping a missing value (``None``) missing."""
    return None if raw is None else text(raw)


def data(raw: object) -> bytes:
    """``raw`` as bytes (a str reply, from a decoding client, is UTF-8 encoded)."""
    if isinstance(raw, bytes):
        return raw
    return (raw if isinstance(raw, str) else str(raw)).encode("utf-8")
