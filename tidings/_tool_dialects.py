"""``notification_tool_schema(dialect)``: the tool's schema as each provider takes it
(interfaces.md, Plugging into agent frameworks).

Every dialect is generated from the action table and the input fields of
:mod:`tidings._tool_schema`. Providers refuse conditionals at the top level
(Anthropic, MCP clients) or demand strict mode (OpenAI), so those dialects state
each action's keys in the ``action`` description instead, and ``call_tool``
reads a null field as absent (C44): the action answers its own reasons. Only the
strict dialect types its fields nullable; the others leave unused keys out, which
costs the model fewer tokens to read (issue 32).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from tidings._tool import ACTIONS
from tidings._tool_schema import INPUT_FIELDS, TOOL_DESCRIPTION, TOOL_NAME, argument_schema
from tidings.store.errors import TidingsError

#: A JSON Schema document (or a provider's tool definition around one), as a JSON object.
Schema = dict[str, object]


def _action_description(unused: str) -> str:
    keys = "; ".join(
        f"{action}: {', '.join(sorted(fields)) if fields else 'no input'}"
        for action, (fields, _) in ACTIONS.items()
    )
    return f"The action to run. Input keys per action — {keys}. {unused}"


def _typed(schema: Schema, *, nullable: bool) -> Schema:
    """``schema`` with ``null`` among its types (strict mode) or without it (a provider that
    lets keys be omitted needs no null: an absent key and a null one mean the same, C44)."""
    field = copy.deepcopy(schema)
    kinds = field["type"] if isinstance(field["type"], list) else [field["type"]]
    kinds = [k for k in kinds if k != "null"] + (["null"] if nullable else [])
    field["type"] = kinds if len(kinds) > 1 else kinds[0]
    return field


def _root(input_schema: Schema, *, strict: bool) -> Schema:
    properties: Schema = {
        "action": {
            "type": "string",
            "enum": list(ACTIONS),
            "description": _action_description(
                "Leave other keys null." if strict else "Omit other keys."
            ),
        },
        "input": input_schema,
        "reasoning": {
            "type": ["string", "null"] if strict else "string",
            "description": "Why you call the tool.",
        },
        "summarize": {"type": ["boolean", "null"] if strict else "boolean"},
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if strict else ["action"],
        "additionalProperties": False,
    }


def flat_arguments() -> Schema:
    """Arguments with no top-level conditional: ``input`` lists every field, optional and
    typed without ``null`` (what the model leaves out is absent)."""
    fields = {name: _typed(field, nullable=False) for name, field in INPUT_FIELDS.items()}
    return _root(
        {"type": "object", "properties": fields, "additionalProperties": False}, strict=False
    )


def strict_arguments() -> Schema:
    """OpenAI strict mode: every key required, the unset ones null."""
    fields = {name: _typed(field, nullable=True) for name, field in INPUT_FIELDS.items()}
    input_schema: Schema = {
        "type": "object",
        "properties": fields,
        "required": list(fields),
        "additionalProperties": False,
        "description": "Every key is sent; null where the action does not use it.",
    }
    return _root(input_schema, strict=True)


def _anthropic() -> Schema:
    return {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": flat_arguments()}


def _openai() -> Schema:
    return {
        "type": "function",
        "name": TOOL_NAME,
        "description": TOOL_DESCRIPTION,
        "parameters": strict_arguments(),
        "strict": True,
    }


def _mcp() -> Schema:
    return {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "inputSchema": flat_arguments()}


#: dialect -> builder (interfaces.md's table).
DIALECTS: dict[str, Callable[[], Schema]] = {
    "json-schema": argument_schema,
    "anthropic": _anthropic,
    "openai": _openai,
    "mcp": _mcp,
}


def notification_tool_schema(dialect: str = "json-schema") -> Schema:
    """The ``notification`` tool's schema in ``dialect`` (``"json-schema"``, the default;
    ``"anthropic"``, ``"openai"`` (strict) or ``"mcp"``); an unknown dialect raises
    :class:`tidings.TidingsError` (``invalid_dialect``)."""
    builder = DIALECTS.get(dialect) if isinstance(dialect, str) else None
    if builder is None:
        raise TidingsError(
            f"dialect must be one of {', '.join(DIALECTS)}", reason="invalid_dialect"
        )
    return builder()
