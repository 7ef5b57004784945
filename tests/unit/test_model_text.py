"""Fewer tokens, same meaning (issue 32): what tidings serialises for a model is compact
JSON with non-ASCII kept (MCP tool results and the attention resource), and the
``anthropic``/``mcp`` schema dialects carry no ``null`` types. The figures are in
bench/tokens.py; these tests hold the forms."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import tidings
from tidings import aio
from tidings.mcp import tools
from tidings.mcp.server import ATTENTION_URI, AgentServer
from tidings.store.jsonfmt import for_model

CHINESE = {"from": "李明", "subject": "评审安排", "message": "下周三下午两点开会，请准备材料。"}


def test_for_model_is_compact_and_keeps_non_ascii() -> None:
    value = {"a": [1, "é"], "icon": "🔔", "text": CHINESE["message"]}
    text = for_model(value)
    assert text == '{"a":[1,"é"],"icon":"🔔","text":"下周三下午两点开会，请准备材料。"}'
    assert json.loads(text) == value


def test_for_model_escapes_a_lone_surrogate_rather_than_fail() -> None:
    """Text with no UTF-8 form is still sent, escaped as JSON allows."""
    value = {"half": "\ud83d", "text": "é"}
    text = for_model(value)
    text.encode("utf-8")
    assert json.loads(text) == value and "\\ud83d" in text


def mcp_texts(workdir: Path) -> tuple[str, str, str]:
    """The MCP server's ``check`` result, ``inbox`` result and attention resource, as text."""

    async def scenario() -> tuple[str, str, str]:
        async with aio.connect("embedded") as hub:
            agent = await hub.agent(workdir, inline=True)
            await agent.publish_event("email", CHINESE, wait=True)
            check = await tools.call(agent, "notification", {"action": "check"})
            inbox = await tools.call(agent, "inbox", {})
            server = AgentServer(agent)
            params: Any = type("Params", (), {"uri": ATTENTION_URI})()
            resource = await server.read_resource(None, params)  # type: ignore[arg-type]
            return (
                check.content[0].text,
                inbox.content[0].text,  # type: ignore[union-attr]
                resource.contents[0].text,
            )  # type: ignore[union-attr]

    return asyncio.run(scenario())


def test_mcp_results_and_resource_are_compact_non_ascii(tmp_path: Path) -> None:
    check, inbox, resource = mcp_texts(tmp_path)
    for text in (check, inbox, resource):
        assert json.loads(text) is not None
        assert text == for_model(json.loads(text))  # compact, nothing escaped
    assert "下周三下午两点开会" in check and "\\u" not in check
    assert json.loads(check)["_meta"]["agent_meta"]["notifications"]["attention"]["email"]
    assert "下周三下午两点开会" in resource


@pytest.mark.parametrize(
    ("dialect", "key"), [("anthropic", "input_schema"), ("mcp", "inputSchema")]
)
def test_flat_dialects_carry_no_null_and_still_validate(dialect: str, key: str) -> None:
    """A provider that lets keys be left out needs no ``null`` type (C44: an absent key
    and a null one mean the same to ``call_tool``)."""
    schema = tidings.notification_tool_schema(dialect)[key]
    assert '"null"' not in json.dumps(schema)
    assert "Omit other keys." in schema["properties"]["action"]["description"]
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"action": "delay", "input": {"channel": "email", "seconds": 5}})
    assert not validator.is_valid({"action": "delay", "input": {"channel": None}})


def test_strict_dialect_keeps_null_for_every_optional_key() -> None:
    schema = tidings.notification_tool_schema("openai")["parameters"]
    fields = schema["properties"]["input"]["properties"]
    assert all("null" in field["type"] for field in fields.values())
    assert "Leave other keys null." in schema["properties"]["action"]["description"]
