"""A ready tool-calling loop, as the Rust SDK's `ToolLoop`: ask the Mind, run the tool
calls it makes (the memory tools, the author's own, and the account's when asked for),
feed the results back, until it answers with text alone."""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

from .context import Context
from .memory_tools import call_memory_tool, is_memory_tool, memory_tools
from .types import AgentFailed, LogKind, Message, MindError, ToolCall, ToolSpec

ToolFn = Callable[[Any], str]
STOPPED = "stopped"


class ToolLoop:
    """Offers the Mind the five memory tools (and any added with `tool`); `run` ends with
    the Mind's first answer without tool calls, or raises `AgentFailed` (`stopped` on a
    stop request, the Mind's error, or the step cap)."""

    def __init__(self, system_prompt: str) -> None:
        self.system_prompt = system_prompt
        self.steps = 20
        self._tools = memory_tools()
        self._own: dict[str, ToolFn] = {}
        self._account_tools = False

    def account_tools(self) -> ToolLoop:
        """Also offers the tools the account registered (`ctx.tools`)."""
        self._account_tools = True
        return self

    def tool(self, spec: ToolSpec, run: ToolFn) -> ToolLoop:
        """Offers a tool of the author's: `run` gets the parsed arguments and returns the
        result text, or raises (the Mind then reads `Tool NAME failed: …`)."""
        self._tools = [t for t in self._tools if t.name != spec.name] + [spec]
        self._own[spec.name] = run
        return self

    def max_steps(self, steps: int) -> ToolLoop:
        """Mind calls at most (default 20)."""
        self.steps = max(steps, 1)
        return self

    def run(self, ctx: Context, task: str) -> str:
        progress = ctx.progress
        progress.report("info", f"started: {_preview(task, 200)}")
        messages = [Message.system(self.system_prompt), Message.user(task)]
        tools = self._offered(ctx)
        for step in range(1, self.steps + 1):
            if ctx.stop_requested():
                raise _stopped(ctx)
            try:
                completion = ctx.mind.complete(messages, tools)
            except MindError as e:
                if e.kind == "stopped" or ctx.stop_requested():
                    raise _stopped(ctx) from None
                progress.report("info", f"failed: {e}")
                raise AgentFailed(str(e)) from None
            text = completion.text or ""
            if text.strip():
                usage = completion.usage
                data = {
                    "step": step,
                    "usage": {
                        "input_tokens": usage.input_tokens,
                        "output_tokens": usage.output_tokens,
                    },
                }
                progress.log(LogKind.THINKING, text, data)
            if not completion.tool_calls:
                progress.report("info", f"finished after {step} step(s)")
                return text
            messages.append(Message.assistant(text, completion.tool_calls))
            for call in completion.tool_calls:
                if ctx.stop_requested():
                    raise _stopped(ctx)
                messages.append(Message.tool(call.id, self._call_tool(ctx, tools, call)))
        message = f"gave up after {self.steps} steps without a final answer (the step cap)"
        progress.report("info", message)
        raise AgentFailed(message)

    def _offered(self, ctx: Context) -> list[ToolSpec]:
        tools = list(self._tools)
        if self._account_tools:
            ours = {t.name for t in tools}
            tools += [t for t in ctx.tools.list() if t.name not in ours]
        return tools

    def _call_tool(self, ctx: Context, tools: Sequence[ToolSpec], call: ToolCall) -> str:
        progress = ctx.progress
        progress.report("tool_use", call.name)
        try:
            arguments = call.arguments()
        except ValueError:
            arguments = call.arguments_json
        data = {"id": call.id, "name": call.name, "arguments": arguments}
        progress.log(LogKind.TOOL_USE, call.name, data)
        offered = any(t.name == call.name for t in tools)
        own = self._own.get(call.name)
        if own is not None:
            result = _run_own(call, own)
        elif offered and is_memory_tool(call.name):
            result = call_memory_tool(ctx.memory, call)
        elif offered:
            try:
                result = ctx.tools.call_json(call.name, call.arguments_json)
            except Exception as e:  # noqa: BLE001 - the Mind reads any failure
                result = f"Tool {call.name} failed: {e}"
        else:
            names = ", ".join(t.name for t in tools)
            result = f"Unknown tool {json.dumps(call.name)}: the tools available are {names}."
        progress.log(LogKind.TOOL_RESULT, result, {"id": call.id, "name": call.name})
        return result


def _run_own(call: ToolCall, run: ToolFn) -> str:
    try:
        arguments = call.arguments()
    except ValueError as e:
        return f"Tool {call.name} failed: the arguments are not valid JSON ({e})"
    try:
        return run(arguments)
    except Exception as e:  # noqa: BLE001 - the Mind reads any failure
        return f"Tool {call.name} failed: {e}"


def _stopped(ctx: Context) -> AgentFailed:
    ctx.progress.report("info", "stopped on request")
    return AgentFailed(STOPPED)


def _preview(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
