"""Channel names, built-ins and reserved stems (channels.md C1-C4, C7)."""

from __future__ import annotations

import re

#: C2: the full-match syntax of a channel name (and of a daemon run id).
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
NAME_PATTERN_TEXT = "^[A-Za-z0-9][A-Za-z0-9_.-]*$"
#: C46: the longest channel name, daemon id or hook name, in characters. With it,
#: every file name tidings makes from a name stays under the 255-byte limit.
MAX_NAME_CHARS = 200

#: C3: the built-in channels.
BUILTIN_CHANNELS = frozenset(
    {
        "bash",
        "btw",
        "cron",
        "daemon",
        "delay-alarm",
        "email",
        "goal",
        "molt",
        "nudge",
        "post-molt",
        "soul",
        "system",
        "tool_loop_guard",
    }
)

#: C4: the only prefix family.
MCP_PREFIX = "mcp."

#: C7: stems that are never channels.
RESERVED_STEMS = frozenset({"hooks", "large_result_acks", "overflow", "comment"})

#: C19: ``.notification/<stem>.json`` files that readers never treat as channels.
NON_CHANNEL_FILES = frozenset({"hooks.json", "large_result_acks.json", "daemon.json"})

DAEMON = "daemon"
DELAY_ALARM = "delay-alarm"
SYSTEM = "system"


def name_error(name: object, what: str = "channel") -> str | None:
    """C2 (and C4's bare ``mcp.``): the exact error message for a bad name, or ``None``."""
    if not isinstance(name, str) or not name:
        return f"{what} must be a non-empty string"
    if ".." in name:
        return f"{what} must not contain '..'"
    if not NAME_RE.fullmatch(name):
        return f"{what} must match {NAME_PATTERN_TEXT}"
    if len(name) > MAX_NAME_CHARS:
        return f"{what} must be at most {MAX_NAME_CHARS} characters"
    if what == "channel" and name == MCP_PREFIX:  # C4: the family needs a member
        return f"channel must name something after '{MCP_PREFIX}'"
    return None


def not_allowlisted_message(name: str) -> str:
    builtins = ", ".join(sorted(BUILTIN_CHANNELS))
    return (
        f"channel {name!r} is not allowlisted: use a built-in ({builtins}), "
        f"a name starting with '{MCP_PREFIX}', or register a hook channel"
    )
