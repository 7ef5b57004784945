"""The one bounded JSON reader, and the matching check of call input (channels.md C47, C48).

Every file tidings reads and every JSON record it reads back from Redis goes
through :func:`parse`: it never raises and never recurses past
:data:`MAX_DEPTH` levels, so no hostile file can raise ``RecursionError`` in a
reader, a tick or a call. Lone surrogate escapes (``"\\ud83d"``, half an emoji)
read as U+FFFD, so everything read can be written back as UTF-8.

:func:`input_problem` checks a value a caller passed (events, envelopes, tool
input, admit payloads) the same way before any I/O: depth, encodability, size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar, overload

#: C47: the deepest nesting (objects and arrays counted) any reader or call accepts.
MAX_DEPTH = 64

#: A JSON string literal (unrolled, so long strings match without backtracking).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_INNERMOST = re.compile(rb"\[\]|\{\}")
#: A ``\u`` escape of a surrogate: the only way a lone one gets into parsed text.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"

T = TypeVar("T")


@dataclass(frozen=True)
class Parsed:
    """A value read successfully."""

    value: object


@dataclass(frozen=True)
class Malformed:
    """Why bytes (or call input) are not a usable JSON value; ``reason`` is machine-readable:
    files ``not_utf8``, ``invalid_json``, ``too_deep``, ``too_large``; call input
    ``too_deep``, ``not_unicode``, ``not_json``, ``too_large``."""

    reason: str
    message: str


def too_deep(data: bytes, max_depth: int = MAX_DEPTH) -> bool:
    """Whether the brackets outside string literals nest deeper than ``max_depth``.

    Fast path: fewer brackets than the limit cannot nest past it. Otherwise each
    pass of one regex removes exactly one level of innermost pairs.
    """
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return False
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", data))
    for _ in range(max_depth):
        brackets = _INNERMOST.sub(b"", brackets)
        if not brackets:
            return False
    return True


def _replace_surrogates(value: object) -> object:
    """A copy with every lone surrogate replaced (depth is already bounded)."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub(REPLACEMENT, value)
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    return value


def _reject_constant(name: str) -> object:
    # NaN and Infinity are not JSON (RFC 8259); accepting them would let a file
    # hold a value that no strict writer (allow_nan=False) can write back.
    raise ValueError(f"{name} is not a JSON value")


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    if len({key for key, _ in pairs}) != len(pairs):
        raise ValueError("duplicate key in a JSON object")
    return dict(pairs)


def parse(
    data: bytes | str,
    *,
    max_depth: int = MAX_DEPTH,
    max_bytes: int | None = None,
    unique_keys: bool = False,
) -> Parsed | Malformed:
    """The JSON value of ``data`` (UTF-8), or why it is malformed. Never raises.

    ``unique_keys``: an object that repeats a key is malformed (``invalid_json``), for
    documents whose every field is validated (a repeat would hide the first value)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if max_bytes is not None and len(raw) > max_bytes:
        return Malformed("too_large", f"{len(raw)} bytes; the limit is {max_bytes}")
    if too_deep(raw, max_depth):
        return Malformed("too_deep", f"JSON nested deeper than {max_depth} levels")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Malformed("not_utf8", f"not valid UTF-8: {exc}"[:300])
    try:
        value = json.loads(
            text,
            parse_constant=_reject_constant,
            object_pairs_hook=_unique_keys if unique_keys else None,
        )
    except (ValueError, RecursionError) as exc:
        return Malformed("invalid_json", f"{type(exc).__name__}: {exc}"[:300])
    if _SURROGATE_ESCAPE.search(raw):
        value = _replace_surrogates(value)
    return Parsed(value)


def loads_or(data: bytes | str | None, default: T, *, max_depth: int = MAX_DEPTH) -> object | T:
    """The parsed value, or ``default`` when ``data`` is ``None`` or malformed."""
    if data is None:
        return default
    parsed = parse(data, max_depth=max_depth)
    return parsed.value if isinstance(parsed, Parsed) else default


def depth_exceeds(value: object, max_depth: int = MAX_DEPTH) -> bool:
    """Whether a Python value nests deeper than ``max_depth`` (iterative; cycles count as deep)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _has_lone_surrogate(value: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def encodable(text: str) -> bool:
    """C48: whether ``text`` can be written as UTF-8 (no lone surrogate)."""
    return _LONE_SURROGATE.search(text) is None


@overload
def echo(value: str) -> str: ...
@overload
def echo(value: object) -> object: ...
def echo(value: object) -> object:
    """A caller's value as an error result repeats it: strings lose lone surrogates
    (C48), scalars stay, anything else becomes a short ``repr``. A result is then
    always writable as UTF-8 JSON."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub(REPLACEMENT, value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dict | list) and not depth_exceeds(value):
        return _replace_surrogates(value)
    return repr(value)[:200]


def input_problem(
    value: object, what: str, *, max_depth: int = MAX_DEPTH, max_bytes: int | None = None
) -> Malformed | None:
    """C47/C48 for call input: ``None``, or the first problem with a message naming it.

    ``reason`` is ``too_deep``, ``not_unicode``, ``not_json`` or ``too_large``;
    callers map it to their own invalid-input reason.
    """
    if depth_exceeds(value, max_depth):
        return Malformed("too_deep", f"{what} is nested deeper than {max_depth} levels")
    if _has_lone_surrogate(value):
        return Malformed("not_unicode", "not valid Unicode")
    try:
        size = len(
            json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
                "utf-8"
            )
        )
    except (TypeError, ValueError, RecursionError, UnicodeEncodeError) as exc:
        return Malformed("not_json", f"{what} is not JSON: {exc}"[:300])
    if max_bytes is not None and size > max_bytes:
        return Malformed("too_large", f"{what} is {size} bytes; the limit is {max_bytes}")
    return None
