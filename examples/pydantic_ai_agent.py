"""A pydantic-ai agent that uses tidings' ``notification`` tool.

The model is pydantic-ai's ``FunctionModel`` playing a scripted LLM, so this runs
offline: it checks its notifications, reads what is live from the stamped result,
dismisses the channel and answers. Swap in a real model name to use an LLM.

    python examples/pydantic_ai_agent.py
"""

from __future__ import annotations

import json
import tempfile
from typing import Any

from pydantic_ai import Agent, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import tidings


def scripted_llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Check first; dismiss what the check showed; then answer."""
    returns = [
        part
        for message in messages
        for part in getattr(message, "parts", [])
        if isinstance(part, ToolReturnPart)
    ]
    if not returns:
        return ModelResponse(parts=[ToolCallPart("notification", {"action": "check"})])
    if len(returns) == 1:
        live = json.loads(returns[0].content)["_meta"]["agent_meta"]["notifications"]
        channel = next(iter(live["attention"]))
        return ModelResponse(
            parts=[
                ToolCallPart(
                    "notification",
                    {
                        "action": "dismiss_channel",
                        "input": {"channel": channel, "reason": "read it"},
                    },
                )
            ]
        )
    return ModelResponse(parts=[TextPart(f"Done: {returns[-1].content}")])


def main() -> None:
    with tempfile.TemporaryDirectory() as workdir, tidings.connect("embedded") as hub:
        agent = hub.agent(workdir)
        agent.publish_event("mcp.ci", {"text": "build 42 passed"})

        def notification(**arguments: Any) -> str:
            result = agent.call_tool(arguments)
            if arguments.get("action") == "check":
                result = agent.stamp(result)  # the live payload rides on the check result
            # compact, non-ASCII kept: the same JSON in the fewest tokens
            return json.dumps(result, ensure_ascii=False, separators=(",", ":"))

        schema = tidings.notification_tool_schema("anthropic")
        tool = Tool.from_schema(
            notification,
            name=schema["name"],
            description=schema["description"],
            json_schema=schema["input_schema"],
        )
        llm_agent = Agent(FunctionModel(scripted_llm), tools=[tool])
        answer = llm_agent.run_sync("Anything new for me?").output
        print(answer)
        assert '"cleared":true' in answer, answer


if __name__ == "__main__":
    main()
