"""LangChain's side of tests/mcp's side-by-side test: langchain 1.4.7's
`create_agent` with the tools of tests/mcp/server.py, loaded over stdio by
LangChain's own MCP adapters (langchain-mcp-adapters 0.3.2), and a scripted
chat model that calls them. Prints, as sorted JSON, the tools the model is
offered (name, description, argument schema) and the tool messages of the
run (content blocks without their random ids, status, name, call id).

The server runs on the tests' venv (mcp 2.x, AGENT_STATE_MCP_PYTHON or
target/mcp-venv); this script on the reference venv (mcp 1.x, which the
adapters require), both made by tests/mcp/setup.sh.
"""

import asyncio
import json
import os
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_mcp_adapters.client import MultiServerMCPClient

ROOT = Path(__file__).resolve().parents[3]
SERVER_PYTHON = os.environ.get(
    "AGENT_STATE_MCP_PYTHON",
    str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "mcp-venv/bin/python"),
)

# The calls the model makes, one step each; the same as the Rust side's.
STEPS = [
    ("add", {"a": 2, "b": 3}),
    ("fail", {"reason": "no budget"}),
    ("add", {"a": "two", "b": 3}),
    ("nope", {}),
]


class ScriptedModel(BaseChatModel):
    """Answers with one tool call per step, then a closing message."""

    offered: list = []
    step: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):
        self.offered.append(tools)
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        if self.step < len(STEPS):
            name, args = STEPS[self.step]
            message = AIMessage(
                content="",
                tool_calls=[{"name": name, "args": args, "id": f"c{self.step + 1}"}],
            )
        else:
            message = AIMessage(content="done")
        self.step += 1
        return ChatResult(generations=[ChatGeneration(message=message)])


def without_ids(content):
    if isinstance(content, list):
        return [
            {k: v for k, v in block.items() if k != "id"} if isinstance(block, dict) else block
            for block in content
        ]
    return content


async def main() -> None:
    client = MultiServerMCPClient(
        {
            "test": {
                "transport": "stdio",
                "command": SERVER_PYTHON,
                "args": [str(ROOT / "tests/mcp/server.py"), "stdio"],
            }
        }
    )
    tools = await client.get_tools()
    model = ScriptedModel()
    agent = create_agent(model, tools=tools)
    state = await agent.ainvoke({"messages": [("user", "go")]})
    offered = [
        {"name": t.name, "description": t.description, "parameters": t.args_schema}
        for t in model.offered[0]
    ]
    answers = [
        {
            "content": without_ids(m.content),
            "status": m.status,
            "name": m.name,
            "tool_call_id": m.tool_call_id,
        }
        for m in state["messages"]
        if isinstance(m, ToolMessage)
    ]
    print(json.dumps({"offered": offered, "answers": answers}, indent=2, sort_keys=True))


asyncio.run(main())
