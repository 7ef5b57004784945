"""The tool's schema dialects and the argument objects they allow (issue 12, acceptance 1-2;
interfaces.md "Plugging into agent frameworks"; channels.md C44)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import tidings
from tidings._hub import Hub
from tidings._tool import ACTIONS
from tidings._tool_dialects import DIALECTS

CONDITIONALS = ("oneOf", "allOf", "anyOf", "not", "if", "then", "else")


def arguments_schema(dialect: str) -> dict[str, Any]:
    schema = tidings.notification_tool_schema(dialect)
    return {
        "json-schema": lambda: schema,
        "anthropic": lambda: schema["input_schema"],
        "openai": lambda: schema["parameters"],
        "mcp": lambda: schema["inputSchema"],
    }[dialect]()


def strict_problems(schema: Any, path: str = "$") -> list[str]:
    """interfaces.md's strict-mode rules for the ``"openai"`` dialect."""
    problems: list[str] = []
    if not isinstance(schema, dict):
        return [f"{path}: not a schema object"]
    problems += [
        f"{path}: uses {word}" for word in ("allOf", "if", "then", "else", "not") if word in schema
    ]
    for branch in schema.get("anyOf", []):
        if branch.get("type") == "object":
            problems.append(f"{path}: anyOf of objects")
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "object" in kinds:
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties is not false")
        if sorted(schema.get("required", [])) != sorted(properties):
            problems.append(f"{path}: not every property is required")
        for name, sub in properties.items():
            if "type" not in sub:
                problems.append(f"{path}.{name}: untyped")
            problems += strict_problems(sub, f"{path}.{name}")
    return problems


@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_acceptance1_every_dialect_is_valid_draft_2020_12(dialect: str) -> None:
    schema = arguments_schema(dialect)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    call = {"action": "delay", "input": {"channel": "email", "seconds": 5}}
    assert validator.is_valid(
        strict_call("delay", channel="email", seconds=5) if dialect == "openai" else call
    )
    assert not validator.is_valid({"action": "explode"})


def test_acceptance1_shapes_follow_the_api_table() -> None:
    anthropic = tidings.notification_tool_schema("anthropic")
    assert set(anthropic) == {"name", "description", "input_schema"}
    openai = tidings.notification_tool_schema("openai")
    assert set(openai) == {"type", "name", "description", "parameters", "strict"}
    assert openai["type"] == "function" and openai["strict"] is True
    mcp = tidings.notification_tool_schema("mcp")
    assert set(mcp) == {"name", "description", "inputSchema"}
    assert tidings.notification_tool_schema() == tidings.notification_tool_schema("json-schema")
    with pytest.raises(tidings.TidingsError) as info:
        tidings.notification_tool_schema("xml")
    assert info.value.reason == "invalid_dialect"


@pytest.mark.parametrize("dialect", ["anthropic", "mcp"])
def test_acceptance1_no_top_level_conditionals(dialect: str) -> None:
    schema = arguments_schema(dialect)
    assert schema["type"] == "object"
    assert not set(CONDITIONALS) & set(schema)


def test_acceptance1_openai_is_strict() -> None:
    schema = arguments_schema("openai")
    assert strict_problems(schema) == []
    # The checker bites: the conditional json-schema dialect is not strict.
    assert strict_problems(tidings.notification_tool_schema("json-schema")) != []


def test_acceptance1_agents_sdk_leaves_it_strict() -> None:
    strict_schema = pytest.importorskip("agents.strict_schema")
    schema = arguments_schema("openai")
    converted = strict_schema.ensure_strict_json_schema(schema)
    assert converted == schema
    assert strict_problems(converted) == []


def test_every_dialect_names_each_action_and_field_of_the_table() -> None:
    fields = {key for keys, _ in ACTIONS.values() for key in keys}
    for dialect in ("anthropic", "openai", "mcp"):
        schema = arguments_schema(dialect)
        assert schema["properties"]["action"]["enum"] == list(ACTIONS)
        assert set(schema["properties"]["input"]["properties"]) == fields
        for action in ACTIONS:
            assert action in schema["properties"]["action"]["description"]


def strict_call(action: str, **fields: Any) -> dict[str, Any]:
    """A strict-mode call: every key present, null where unset."""
    schema = arguments_schema("openai")
    payload = {key: fields.get(key) for key in schema["properties"]["input"]["properties"]}
    arguments = {"action": action, "input": payload, "reasoning": None, "summarize": None}
    jsonschema.validate(arguments, schema)
    return arguments


@pytest.fixture
def hub(fake_redis: Any) -> Iterator[Hub]:
    with tidings.connect(client=fake_redis, clock=tidings.FakeClock()) as h:
        yield h


@pytest.mark.parametrize(
    ("action", "fields"),
    [
        ("check", {}),
        ("delay", {"channel": "email", "seconds": 30}),
        ("delay", {"channel": "email", "seconds": 0}),
        ("delay", {"channel": "email"}),
        ("list", {}),
        ("settings", {}),
        ("dismiss_channel", {"channel": "soul"}),
        ("dismiss_channel", {"channel": "soul", "force": True, "reason": "done"}),
        ("manual", {}),
    ],
)
def test_acceptance2_strict_calls_equal_minimal_forms(
    hub: Hub, tmp_path: Path, action: str, fields: dict[str, Any]
) -> None:
    results = []
    for name, arguments in (
        ("minimal", {"action": action, "input": fields}),
        ("strict", strict_call(action, **fields)),
    ):
        (tmp_path / name).mkdir()
        agent = hub.agent(tmp_path / name, inline=True)
        agent.publish("soul", {"header": "s"})
        agent.publish_event("email", {"text": "hi"})
        agent.stamp({})
        results.append(agent.call_tool(arguments))
    # A delay's request_id is fresh for every request; everything else must match.
    same = [{k: v for k, v in result.items() if k != "request_id"} for result in results]
    assert same[0] == same[1]
    assert results[0].get("error_code") != "INVALID_ARGUMENT", results[0]


def test_c44_nulls_and_tc_id(hub: Hub, tmp_path: Path) -> None:
    agent = hub.agent(tmp_path, inline=True)
    placeholder = agent.notification("check")
    assert (
        agent.call_tool(
            {
                "action": "check",
                "input": {"_tc_id": "x"},
                "_tc_id": None,
                "reasoning": None,
                "summarize": None,
            }
        )
        == placeholder
    )
    assert agent.call_tool({"action": "settings", "input": {"channel": None}}) == (
        agent.notification("settings")
    )
    assert (
        agent.call_tool({"action": "check", "reasoning": None, "summarize": 1})["error_code"]
        == "INVALID_ARGUMENT"
    )
