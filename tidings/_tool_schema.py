"""The JSON schema of the ``notification`` tool for an LLM (channels.md C44, delay.md D3).

Built from the tool's own action table, so the schema and the validation can
never disagree about which input keys an action takes. The provider dialects
(:mod:`tidings._tool_dialects`) are built from the same pieces.
"""

from __future__ import annotations

import copy

from tidings._tool import ACTIONS

TOOL_NAME = "notification"
TOOL_DESCRIPTION = (
    "Read, dismiss, delay and register your notification channels. `check` shows what is "
    "live; dismiss_* clear mirrors (never the producer's own state); add/list/edit/drop manage "
    "hook channels; delay hides one channel for a while; settings and manual explain limits."
)


def _text(description: str) -> dict[str, object]:
    return {"type": ["string", "null"], "description": description}


#: Every input field any action takes.
INPUT_FIELDS: dict[str, dict[str, object]] = {
    "channel": _text("Channel name (file stem), e.g. 'email', 'system', 'mcp.build'."),
    "force": {
        "type": ["boolean", "null"],
        "description": "Dismiss even if guarded or changed since last delivered.",
    },
    "reason": _text("Why you dismiss (required for post-molt)."),
    "event_id": _text("Event to remove from system (default) or daemon."),
    "ref_id": _text("Remove every event with this ref_id from system (default) or daemon."),
    "name": _text("Hook name."),
    "version": _text("Hook version (default 1.0.0)."),
    "source": _text("What produces the hook channel."),
    "description": _text("What the hook channel tells you."),
    "how_to_modify": _text("How to change the hook."),
    "how_to_cancel": _text("How to stop the hook's process."),
    "instructions": _text("How to handle the hook's notifications."),
    "max_events": {
        "type": ["integer", "null"],
        "minimum": 1,
        "maximum": 10000,
        "description": "Events the hook channel retains.",
    },
    "seconds": {
        "type": "integer",
        "minimum": 0,
        "description": "Delay length; 0 cancels the live delay.",
    },
}


def _action_rule(action: str, keys: frozenset[str]) -> dict[str, object]:
    return {
        "if": {"properties": {"action": {"const": action}}, "required": ["action"]},
        "then": {
            "properties": {
                "input": {
                    "type": "object",
                    "properties": {k: {} for k in sorted(keys)},
                    "additionalProperties": False,
                }
            }
        },
    }


def argument_schema() -> dict[str, object]:
    """The ``"json-schema"`` dialect: the arguments' JSON Schema (2020-12), with the
    input keys of each action as conditional rules."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": TOOL_NAME,
        "description": TOOL_DESCRIPTION,
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "input": {"type": "object", "properties": copy.deepcopy(INPUT_FIELDS)},
            "reasoning": {"type": "string", "description": "Why you call the tool."},
            "summarize": {"type": "boolean"},
        },
        "required": ["action"],
        "additionalProperties": False,
        "allOf": [_action_rule(action, keys) for action, (keys, _) in ACTIONS.items()],
    }
