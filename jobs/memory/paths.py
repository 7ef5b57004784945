"""Literal repository paths and how they are shown (memory-inbox.md M25-M27).

A path is its raw bytes everywhere inside the package; it becomes text only
for payloads and summaries, through :func:`display`.
"""

from __future__ import annotations

import os

#: Shown as ``\xNN``: the C0 controls and DEL.
_CONTROL = frozenset(range(0x20)) | {0x7F}
#: Shown as ``\uNNNN``: the C1 controls (U+0085 among them) and the Unicode line and
#: paragraph separators, which ``str.splitlines()`` and many readers take as line breaks.
_BREAKING = frozenset(range(0x80, 0xA0)) | {0x2028, 0x2029}
_ESCAPED = _CONTROL | _BREAKING


def display(raw: bytes) -> tuple[str, bool]:
    """M26: ``(text, escaped)``. Valid UTF-8 without control characters or line
    separators is shown as is; anything else is escaped (``\\`` → ``\\\\``, bad bytes,
    C0 controls and DEL → ``\\xNN``, C1 controls, U+2028 and U+2029 → ``\\uNNNN``), so
    no name breaks a line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if not any(ord(ch) in _ESCAPED for ch in text):
            return text, False
    out: list[str] = []
    for ch in raw.decode("utf-8", "surrogateescape"):
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code in _CONTROL:
            out.append(f"\\x{code:02x}")
        elif code in _BREAKING:
            out.append(f"\\u{code:04x}")
        elif ch == "\\":
            out.append("\\\\")
        else:
            out.append(ch)
    return "".join(out), True


def display_text(raw: bytes) -> str:
    return display(raw)[0]


def display_name(name: str | None) -> str | None:
    """M26: a branch name or file-system path held as ``str`` the way pygit2 and ``os``
    give it (undecodable bytes as lone surrogates), in its display form."""
    return None if name is None else display_text(os.fsencode(name))


def excluded(raw: bytes) -> bool:
    """M27: any segment equal to ``.git`` (ASCII case-insensitive) is never observed."""
    lowered = raw.lower()
    if b".git" not in lowered:
        return False
    return b".git" in lowered.split(b"/")


def to_str(raw: bytes) -> str:
    """The ``str`` pygit2 takes for a raw path (file-system decoding, reversible)."""
    return os.fsdecode(raw)
