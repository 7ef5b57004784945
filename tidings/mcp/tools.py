"""The MCP tools of ``tidings mcp``: each maps to one agent call, errors to ``isError``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypedDict

from mcp_types import CallToolResult, TextContent, Tool

from tidings._tool import InvalidArgument, ToolResult
from tidings._tool_dialects import flat_arguments
from tidings._tool_schema import TOOL_DESCRIPTION, TOOL_NAME
from tidings.aio import AsyncAgent
from tidings.jobs.consumer import is_placeholder
from tidings.jobs.guard import ErrorAnswer, unexpected_answer
from tidings.jobs.inbox import DEFAULT_PAGE, PublicItem, check_query
from tidings.store.errors import TidingsError
from tidings.store.jsonfmt import for_model


class InboxPage(TypedDict):
    """The ``inbox`` tool's answer (M7): a page of items, newest first."""

    status: Literal["ok"]
    items: list[PublicItem]


#: Largest page of inbox items one ``inbox`` call returns (the projection's own bound).
INBOX_LIMIT_MAX = 200
INBOX_STATES = ["pending", "processing", "deferred", "needs-repair", "handled", "ignored"]

INBOX_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "limit": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": INBOX_LIMIT_MAX,
            "description": "Items to return, newest first (default 30).",
        },
        "state": {
            "type": ["string", "null"],
            "enum": [*INBOX_STATES, None],
            "description": "Only items in this state.",
        },
    },
    "additionalProperties": False,
}
IGNORE_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {"event_id": {"type": "string", "description": "The inbox item to ignore."}},
    "required": ["event_id"],
    "additionalProperties": False,
}


def tools() -> list[Tool]:
    return [  # the notification tool as notification_tool_schema("mcp") states it
        Tool(name=TOOL_NAME, description=TOOL_DESCRIPTION, input_schema=flat_arguments()),
        Tool(
            name="inbox",
            input_schema=INBOX_SCHEMA,
            description="Your inbox items (memory changes and other events), newest first; "
            "reading never wakes you.",
        ),
        Tool(
            name="inbox_ignore",
            input_schema=IGNORE_SCHEMA,
            description="Move a pending, deferred or processing inbox item to ignored.",
        ),
    ]


def as_result(result: Mapping[str, object]) -> CallToolResult:
    """The result JSON as text (compact, non-ASCII kept: issue 32) and as structured
    content; ``isError`` on error or failed."""
    failed = result.get("status") in ("error", "failed")
    return CallToolResult(
        content=[TextContent(type="text", text=for_model(result))],
        structured_content=dict(result),
        is_error=failed,
    )


async def _inbox(agent: AsyncAgent, arguments: Mapping[str, object]) -> InboxPage | InvalidArgument:
    extra = set(arguments) - {"limit", "state"}
    if extra:
        return {
            "status": "failed",
            "error_code": "INVALID_ARGUMENT",
            "reason": "invalid_argument",
            "message": f"inbox: unknown argument(s): {', '.join(sorted(extra))}",
        }
    limit, state = arguments.get("limit"), arguments.get("state")
    # wrong types raise the projection's reasons (invalid_limit, invalid_state); past here
    # limit is an int or None and state a str or None
    check_query(DEFAULT_PAGE if limit is None else limit, state, None)
    items = await agent.inbox(
        limit if isinstance(limit, int) else DEFAULT_PAGE, state if isinstance(state, str) else None
    )
    return {"status": "ok", "items": items}


async def _ignore(agent: AsyncAgent, arguments: Mapping[str, object]) -> Mapping[str, object]:
    if set(arguments) != {"event_id"}:
        return {
            "status": "failed",
            "error_code": "INVALID_ARGUMENT",
            "reason": "invalid_argument",
            "message": "inbox_ignore takes exactly one argument, event_id",
        }
    event_id = arguments["event_id"]
    # a non-string is no event id: "" gets the same not_found answer
    return await agent.ignore(event_id if isinstance(event_id, str) else "")


async def _notification(
    agent: AsyncAgent, arguments: Mapping[str, object]
) -> ToolResult | ErrorAnswer:
    """The tool's result; ``check`` comes stamped (C24, C45). An MCP client does not stamp
    tool results, so the server does it for the one result whose text promises the live
    payload "on this same result", as ``tidings check`` and ``tidings://attention`` do."""
    result = await agent.call_tool(arguments)
    return await agent.stamp(dict(result)) if is_placeholder(result) else result


async def call(
    agent: AsyncAgent, name: str, arguments: Mapping[str, object] | None
) -> CallToolResult:
    """Run tool ``name`` with the client's ``arguments`` (its open JSON, checked by the
    agent call); nothing raises out of here (C52)."""
    given = arguments or {}
    try:
        if name == "notification":
            return as_result(await _notification(agent, given))
        if name == "inbox":
            return as_result(await _inbox(agent, given))
        if name == "inbox_ignore":
            return as_result(await _ignore(agent, given))
        return as_result(
            {"status": "error", "reason": "unknown_tool", "message": f"no tool named {name!r}"}
        )
    except TidingsError as exc:
        return as_result(exc.as_result())
    except Exception as exc:
        return as_result(unexpected_answer(f"mcp tool {name}", exc, (agent,)))
