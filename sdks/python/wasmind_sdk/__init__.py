"""Write wasmind agents in Python.

An agent is a function `run(ctx: Context, task: str) -> str`: it receives its task (the
user's message) and returns its final answer, or raises `AgentFailed` with why it could not
produce one. Everything it can do beyond computing goes through the `Context`: the Mind
(`ctx.mind`, chat completion with tool calls), the account's long-term memory
(`ctx.memory`), the tools the account registered (`ctx.tools`), the web (`ctx.fetch`,
through the host's egress door), progress reports and log events (`ctx.progress`) and
`ctx.stop_requested()`. `export_agent(run)` makes the class
componentize-py exports as the `wasmind:agent` world's `run`.

Built into a component (componentize-py, from the WIT in `wasmind_sdk/wit`), the context
talks to the host; natively (pytest), the same code runs against `wasmind_sdk.testing`'s
doubles, and `check_replay` checks it survives a restart.
"""

from .context import Context, Memory, Mind, Progress, Tools
from .host import export_agent
from .memory_tools import MEMORY_TOOL_NAMES, call_memory_tool, is_memory_tool, memory_tools
from .tool_loop import ToolLoop
from .types import (
    AgentFailed,
    Breakdown,
    Completion,
    FetchError,
    FetchRequest,
    ListRequest,
    LogKind,
    MemoryRecord,
    MemoryServiceError,
    Message,
    MindError,
    PutRequest,
    PutResult,
    Response,
    Role,
    SearchHit,
    SearchRequest,
    ToolCall,
    ToolError,
    ToolSpec,
    Usage,
)

__all__ = [
    "AgentFailed",
    "Breakdown",
    "Completion",
    "Context",
    "FetchError",
    "FetchRequest",
    "ListRequest",
    "LogKind",
    "MEMORY_TOOL_NAMES",
    "Memory",
    "MemoryRecord",
    "MemoryServiceError",
    "Message",
    "Mind",
    "MindError",
    "Progress",
    "PutRequest",
    "PutResult",
    "Response",
    "Role",
    "SearchHit",
    "SearchRequest",
    "ToolCall",
    "ToolError",
    "ToolLoop",
    "ToolSpec",
    "Tools",
    "Usage",
    "call_memory_tool",
    "export_agent",
    "is_memory_tool",
    "memory_tools",
]
