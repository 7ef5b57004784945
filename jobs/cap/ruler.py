"""The ruler and the text forms of a lane (block-cap.md B5, B10, B11).

One JSON writer serves all three forms: the *ruler* text (non-ASCII escaped,
keys sorted, ``", "``/``": "``), the *canonical* text (the same with non-ASCII
kept: spill names and reuse checks) and the spill *content* (indent 2,
non-ASCII kept). A value JSON cannot hold is written as its ``str()``; a lane
that still cannot be written (a cycle, an integer too long to print) measures
0 and is never spilled.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math

#: B5: the separators of the ruler and canonical texts.
SEPARATORS = (", ", ": ")
#: B5: the persistent lane is measured inside this wrapper.
PERSISTENT_WRAPPER = "notification_persistent"


class Unserialisable(ValueError):
    """The value has no JSON text, even with ``str()`` for foreign values."""


def _key(key: object) -> str:
    """A dict key as JSON writes it (``True`` → ``"true"``), foreign keys as ``str()``."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    if isinstance(key, int | float):
        return json.dumps(key) if math.isfinite(key) else str(key)
    return str(key)


def _plain(value: object, open_ids: set[int]) -> object:
    """``value`` with string keys and ``str()`` for everything JSON cannot hold."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict | list | tuple):
        if id(value) in open_ids:
            raise Unserialisable("circular reference")
        open_ids.add(id(value))
        try:
            if isinstance(value, dict):
                return {_key(k): _plain(v, open_ids) for k, v in value.items()}
            return [_plain(v, open_ids) for v in value]
        finally:
            open_ids.discard(id(value))
    return str(value)


def dumps(
    value: object,
    *,
    ensure_ascii: bool,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    indent: int | None = None,
) -> str:
    """JSON text of ``value`` with foreign values as ``str()``; raises :class:`Unserialisable`.

    The C encoder handles ordinary lanes in one pass; only a lane it refuses
    (``NaN``, mixed key types, a foreign key) goes through :func:`_plain` first.
    """
    with contextlib.suppress(Exception):  # any refusal: try the normalised form
        return json.dumps(
            value,
            allow_nan=False,
            default=str,
            ensure_ascii=ensure_ascii,
            sort_keys=sort_keys,
            separators=separators,
            indent=indent,
        )
    try:
        return json.dumps(
            _plain(value, set()),
            allow_nan=False,
            ensure_ascii=ensure_ascii,
            sort_keys=sort_keys,
            separators=separators,
            indent=indent,
        )
    except Exception as exc:  # a cycle, an over-long int, a failing __str__, deep nesting
        raise Unserialisable(type(exc).__name__) from exc


def ruler_text(value: object) -> str:
    """B5: the text a lane is measured by."""
    return dumps(value, ensure_ascii=True, sort_keys=True, separators=SEPARATORS)


def measure(value: object) -> int:
    """B5: the size of an attention lane (0 when it cannot be written)."""
    try:
        return len(ruler_text(value))
    except Unserialisable:
        return 0


def persistent_view(block: object) -> dict[str, object]:
    """B5/B11: what the persistent lane is measured and spilled as."""
    return {PERSISTENT_WRAPPER: block}


def measure_persistent(block: object) -> int:
    """B5: the size of a persistent lane, inside its wrapper."""
    return measure(persistent_view(block))


def canonical_text(value: object, ruler: str | None = None) -> str:
    """B10: sorted, ``", "``/``": "``, non-ASCII kept.

    Given the ruler text of the same value, it is reused when it holds no
    ``\\u`` escape: then the value had no non-ASCII character and both texts
    are identical.
    """
    if ruler is not None and "\\u" not in ruler:
        return ruler
    return dumps(value, ensure_ascii=False, sort_keys=True, separators=SEPARATORS)


def digest(canonical: str) -> str:
    """sha256 hex of the canonical text's UTF-8 bytes (lone surrogates passed through)."""
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def content_bytes(value: object) -> bytes:
    """B10/B11: a spill file's bytes: indent 2, non-ASCII kept.

    A string with a lone surrogate has no UTF-8 form; then that file is written
    with ``\\u`` escapes, which read back to the very same value.
    """
    text = dumps(value, ensure_ascii=False, indent=2)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return dumps(value, ensure_ascii=True, indent=2).encode("ascii")
