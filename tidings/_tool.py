"""The agent-facing ``notification`` tool (channels.md C44, C45 and the action table).

:func:`call_tool` takes raw tool-call arguments, validates them before any I/O
and routes the action; :func:`notification` is the same call from Python.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, Protocol, TypedDict

from tidings import _manual
from tidings.jobs.channels import EDITABLE, MANIFEST_FIELDS, add, drop, edit, list_hooks, show
from tidings.jobs.consumer import (
    check_placeholder,
    dismiss_channel,
    dismiss_event,
    dismiss_ref,
    request_delay,
)
from tidings.jobs.runtime import Runtime
from tidings.store.jsonread import input_problem
from tidings.store.models import AgentRecord

#: What an action answers: its job's result (each job's own TypedDicts), a JSON object.
ToolResult = dict[str, object]
#: An action's input once checked (C44): an object of JSON values.
Payload = dict[str, object]


class InvalidArgument(TypedDict):
    """C44: the tool call itself is malformed (nothing was read or written)."""

    status: Literal["failed"]
    error_code: Literal["INVALID_ARGUMENT"]
    #: C44: every error answer of the tool carries a reason of the one registry.
    reason: Literal["invalid_argument"]
    message: str


class Agent(Protocol):
    """What the tool needs of an agent: its ports and its record."""

    @property
    def runtime(self) -> Runtime: ...

    @property
    def record(self) -> AgentRecord: ...


Handler = Callable[[Agent, Payload], ToolResult]

#: C44: keys allowed at the root of the raw arguments.
ROOT_KEYS = frozenset({"action", "input", "reasoning", "summarize", "_tc_id"})
#: C44: root keys where null means absent (strict tool schemas send every key).
NULLABLE_ROOT_KEYS = frozenset({"reasoning", "summarize", "_tc_id"})
#: The tool-call id some harnesses add to the arguments: ignored at the root and in ``input``.
TOOL_CALL_ID = "_tc_id"
#: C44: input fields that must be strings when present.
TEXT_FIELDS = frozenset(
    {
        "channel",
        "reason",
        "event_id",
        "ref_id",
        "name",
        "version",
        "source",
        "description",
        "how_to_modify",
        "how_to_cancel",
        "instructions",
    }
)
BOOLEAN_FIELDS = frozenset({"force"})
DISMISS_KEYS = frozenset({"channel", "force", "reason"})
EDIT_FIELDS = frozenset(EDITABLE)


def invalid_argument(message: str) -> ToolResult:
    answer: InvalidArgument = {
        "status": "failed",
        "error_code": "INVALID_ARGUMENT",
        "reason": "invalid_argument",
        "message": message,
    }
    return dict(answer)


def _check(agent: Agent, payload: Payload) -> ToolResult:
    """C45: reads and writes nothing; the orchestrator stamps the result."""
    return check_placeholder()


def _dismiss_channel(agent: Agent, p: Payload) -> ToolResult:
    return dict(
        dismiss_channel(
            agent.runtime,
            agent.record,
            p.get("channel"),
            force=p.get("force"),
            reason=p.get("reason"),
        )
    )


def _dismiss_event(agent: Agent, p: Payload) -> ToolResult:
    return dict(
        dismiss_event(
            agent.runtime,
            agent.record,
            p.get("event_id"),
            channel=p.get("channel"),
            force=p.get("force"),
            reason=p.get("reason"),
        )
    )


def _dismiss_ref(agent: Agent, p: Payload) -> ToolResult:
    return dict(
        dismiss_ref(
            agent.runtime,
            agent.record,
            p.get("ref_id"),
            channel=p.get("channel"),
            force=p.get("force"),
            reason=p.get("reason"),
        )
    )


def _add(agent: Agent, p: Payload) -> ToolResult:
    return dict(add(agent.runtime, agent.record, p))


def _list(agent: Agent, p: Payload) -> ToolResult:
    return dict(list_hooks(agent.runtime, agent.record))


def _edit(agent: Agent, p: Payload) -> ToolResult:
    fields = {k: v for k, v in p.items() if k != "name"}
    return dict(edit(agent.runtime, agent.record, p.get("name"), fields))


def _drop(agent: Agent, p: Payload) -> ToolResult:
    return dict(drop(agent.runtime, agent.record, p.get("name")))


def _delay(agent: Agent, p: Payload) -> ToolResult:
    # ``seconds`` goes through untouched: a non-integer is the job's ``invalid_delay``.
    return dict(request_delay(agent.runtime, agent.record, p.get("channel"), p.get("seconds")))


def _settings(agent: Agent, p: Payload) -> ToolResult:
    return dict(show(agent.record))


def _manual_action(agent: Agent, p: Payload) -> ToolResult:
    return dict(_manual.manual())


#: The action table: action -> (input keys it lists, handler).
ACTIONS: dict[str, tuple[frozenset[str], Handler]] = {
    "check": (frozenset(), _check),
    "dismiss_channel": (DISMISS_KEYS, _dismiss_channel),
    "dismiss_event": (DISMISS_KEYS | {"event_id"}, _dismiss_event),
    "dismiss_ref": (DISMISS_KEYS | {"ref_id"}, _dismiss_ref),
    "add": (MANIFEST_FIELDS, _add),
    "list": (frozenset(), _list),
    "edit": (EDIT_FIELDS | {"name"}, _edit),
    "drop": (frozenset({"name"}), _drop),
    "delay": (frozenset({"channel", "seconds"}), _delay),
    "settings": (frozenset(), _settings),
    "manual": (frozenset(), _manual_action),
}


#: Every input key some action lists (what a strict schema sends, null where unset).
ALL_INPUT_KEYS = frozenset(key for keys, _ in ACTIONS.values() for key in keys)


def notification(
    agent: Agent, action: str, input: Mapping[str, object] | None = None
) -> ToolResult:
    arguments: dict[str, object] = {"action": action, "input": {} if input is None else input}
    return call_tool(agent, arguments)


def _root_problem(arguments: Mapping[str, object]) -> ToolResult | None:
    extra = set(arguments) - ROOT_KEYS
    if extra:
        return invalid_argument(f"unknown argument(s): {', '.join(sorted(map(str, extra)))}")
    if not isinstance(arguments.get("action"), str):
        return invalid_argument("action must be a string")
    if "summarize" in arguments and not isinstance(arguments["summarize"], bool):
        return invalid_argument("summarize must be a boolean")
    if "reasoning" in arguments and not isinstance(arguments["reasoning"], str):
        return invalid_argument("reasoning must be a string")
    payload = arguments.get("input")
    if payload is not None and not isinstance(payload, dict):
        return invalid_argument("input must be an object")
    return None


def _input_problem(action: str, payload: Payload, allowed: frozenset[str]) -> ToolResult | None:
    if action == "dismiss_channel" and ({"event_id", "ref_id"} & set(payload)):
        return invalid_argument(
            "dismiss_channel clears a whole channel; event_id and ref_id belong to "
            "dismiss_event and dismiss_ref"
        )
    unknown = set(payload) - allowed
    if unknown:
        return invalid_argument(
            f"{action}: unknown input key(s): {', '.join(sorted(map(str, unknown)))}"
        )
    for key, value in payload.items():
        if key in BOOLEAN_FIELDS and not isinstance(value, bool):
            return invalid_argument(f"{key} must be a boolean")
        if key in TEXT_FIELDS and not isinstance(value, str):
            return invalid_argument(f"{key} must be a string")
    return None


def _present(action: str, payload: Mapping[str, object]) -> Payload:
    """The input fields that count: a null field is absent (C44), ``_tc_id`` is ignored.

    ``settings`` takes exactly ``{}`` (C42): there only the nulls of keys that some
    action lists are absent (a strict schema sends them all), so ``{"x": null}`` stays
    an unknown key.
    """
    absent_if_null = ALL_INPUT_KEYS if action == "settings" else None
    return {
        k: v
        for k, v in payload.items()
        if k != TOOL_CALL_ID and not (v is None and (absent_if_null is None or k in absent_if_null))
    }


def call_tool(agent: Agent, arguments: object) -> ToolResult:
    """C44: validate raw arguments before any I/O, then run the action."""
    if not isinstance(arguments, dict):
        return invalid_argument("arguments must be an object")
    shape = input_problem(arguments, "arguments")  # C47, C48
    if shape is not None:
        return invalid_argument(shape.message)
    arguments = {k: v for k, v in arguments.items() if not (k in NULLABLE_ROOT_KEYS and v is None)}
    problem = _root_problem(arguments)
    if problem is not None:
        return problem
    action: str = arguments["action"]
    if action not in ACTIONS:
        return {
            "status": "error",
            "reason": "unknown_action",
            "message": f"Unknown notification action: {action}",
        }
    if "input" in arguments and arguments["input"] is None and action == "settings":
        return invalid_argument("settings takes exactly {} as input")
    payload = _present(action, arguments.get("input") or {})
    allowed, handler = ACTIONS[action]
    problem = _input_problem(action, payload, allowed)
    if problem is not None:
        return problem
    return handler(agent, payload)
