"""The agent-facing ``notification`` tool (channels.md C44, C45 and the action table).

:func:`call_tool` takes raw tool-call arguments, validates them before any I/O
and routes the action; :func:`notification` is the same call from Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs import delivery

if TYPE_CHECKING:
    from tidings._agent import Agent

Result = dict[str, Any]

#: C44: keys allowed at the root of the raw arguments.
ROOT_KEYS = frozenset({"action", "input", "reasoning", "summarize", "_tc_id"})


def invalid_argument(message: str) -> Result:
    return {"status": "failed", "error_code": "INVALID_ARGUMENT", "message": message}


def _check(agent: Agent, payload: dict[str, Any]) -> Result:
    """C45: reads and writes nothing; the orchestrator stamps the result."""
    return delivery.check_placeholder()


#: action -> (allowed input keys, handler)
ACTIONS: dict[str, tuple[frozenset[str], Any]] = {
    "check": (frozenset(), _check),
}


def notification(agent: Agent, action: str, input: dict[str, Any] | None = None) -> Result:
    arguments: dict[str, Any] = {"action": action}
    if input is not None:
        arguments["input"] = input
    return call_tool(agent, arguments)


def call_tool(agent: Agent, arguments: object) -> Result:
    if not isinstance(arguments, dict):
        return invalid_argument("arguments must be an object")
    extra = set(arguments) - ROOT_KEYS
    if extra:
        return invalid_argument(f"unknown argument(s): {', '.join(sorted(map(str, extra)))}")
    action = arguments.get("action")
    if not isinstance(action, str):
        return invalid_argument("action must be a string")
    if "summarize" in arguments and not isinstance(arguments["summarize"], bool):
        return invalid_argument("summarize must be a boolean")
    if "reasoning" in arguments and not isinstance(arguments["reasoning"], str):
        return invalid_argument("reasoning must be a string")
    if action not in ACTIONS:
        return {"status": "error", "message": f"Unknown notification action: {action}"}
    payload = arguments.get("input")
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        return invalid_argument("input must be an object")
    allowed, handler = ACTIONS[action]
    unknown = set(payload) - allowed
    if unknown:
        return invalid_argument(
            f"{action}: unknown input key(s): {', '.join(sorted(map(str, unknown)))}"
        )
    result: Result = handler(agent, payload)
    return result
