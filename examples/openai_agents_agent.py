"""An OpenAI Agents SDK agent with tidings' strict ``notification`` tool.

The tool's parameters are ``notification_tool_schema("openai")``: strict mode, so a
model sends every key, null where unset, and tidings reads null as absent (C44).
A scripted model stands in for the LLM, so this runs offline.

    python examples/openai_agents_agent.py
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from typing import Any

from agents import Agent, FunctionTool, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import tidings
import tidings.aio

STRICT = tidings.notification_tool_schema("openai")


def strict_call(action: str, **fields: Any) -> str:
    """What a strict-mode model sends: every key present, null where unset."""
    payload = {
        key: fields.get(key) for key in STRICT["parameters"]["properties"]["input"]["properties"]
    }
    return json.dumps({"action": action, "input": payload, "reasoning": None, "summarize": None})


class ScriptedModel(Model):
    """Delays the noisy channel for five minutes, then reports what tidings said."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        outputs = [
            item
            for item in input
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        if not outputs:
            call = ResponseFunctionToolCall(
                type="function_call",
                call_id="call_1",
                name="notification",
                arguments=strict_call("delay", channel="mcp.ci", seconds=300),
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(
            type="output_text", text=str(outputs[-1]["output"]), annotations=[]
        )
        message = ResponseOutputMessage(
            id="msg_1", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("this example does not stream")


async def main() -> None:
    set_tracing_disabled(True)  # nothing leaves this machine
    with tempfile.TemporaryDirectory() as workdir:
        async with tidings.aio.connect("embedded") as hub:
            agent = await hub.agent(workdir)

            async def notification(ctx: Any, arguments: str) -> str:
                # compact, non-ASCII kept: the same JSON in the fewest tokens
                return json.dumps(
                    await agent.call_tool(json.loads(arguments)),
                    ensure_ascii=False,
                    separators=(",", ":"),
                )

            tool = FunctionTool(
                name=STRICT["name"],
                description=STRICT["description"],
                params_json_schema=STRICT["parameters"],
                on_invoke_tool=notification,
                strict_json_schema=True,
            )
            llm_agent = Agent(name="assistant", model=ScriptedModel(), tools=[tool])
            result = await Runner.run(llm_agent, "Mute the CI channel for five minutes.")
            print(result.final_output)
            assert json.loads(result.final_output)["status"] == "ok", result.final_output


if __name__ == "__main__":
    asyncio.run(main())
