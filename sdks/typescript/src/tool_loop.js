// A ready tool-calling loop, as the Rust SDK's `ToolLoop`: ask the Mind, run the tool calls
// it makes (the memory tools, the author's own, and the account's when asked for), feed the
// results back, until it answers with text alone.

import { callMemoryTool, isMemoryTool, memoryTools } from './memory_tools.js';
import { AgentFailed, LogKind, Message, MindError } from './types.js';

export const STOPPED = 'stopped';

/** Offers the Mind the five memory tools (and any added with `tool`); `run` ends with the
 * Mind's first answer without tool calls, or throws `AgentFailed` (`stopped` on a stop
 * request, the Mind's error, or the step cap). */
export class ToolLoop {
  /** @param {string} systemPrompt */
  constructor(systemPrompt) {
    this.systemPrompt = systemPrompt;
    this.steps = 20;
    this.tools = memoryTools();
    /** @type {Map<string, (args: any) => string>} */
    this.own = new Map();
    this.accountTools_ = false;
  }

  /** Also offers the tools the account registered (`ctx.tools`). */
  accountTools() {
    this.accountTools_ = true;
    return this;
  }

  /** Offers a tool of the author's: `run` gets the parsed arguments and returns the result
   * text, or throws (the Mind then reads `Tool NAME failed: …`). */
  tool(spec, run) {
    this.tools = [...this.tools.filter((t) => t.name !== spec.name), spec];
    this.own.set(spec.name, run);
    return this;
  }

  /** Mind calls at most (default 20). */
  maxSteps(steps) {
    this.steps = Math.max(steps, 1);
    return this;
  }

  /** @param {import('./context.js').Context} ctx @param {string} task @returns {string} */
  run(ctx, task) {
    const progress = ctx.progress;
    progress.report('info', `started: ${preview(task, 200)}`);
    const messages = [Message.system(this.systemPrompt), Message.user(task)];
    const tools = this.offered(ctx);
    for (let step = 1; step <= this.steps; step++) {
      if (ctx.stopRequested()) throw stopped(ctx);
      let completion;
      try {
        completion = ctx.mind.complete(messages, tools);
      } catch (e) {
        if (!(e instanceof MindError)) throw e;
        if (e.kind === 'stopped' || ctx.stopRequested()) throw stopped(ctx);
        progress.report('info', `failed: ${e.message}`);
        throw new AgentFailed(e.message);
      }
      const text = completion.text ?? '';
      if (text.trim()) {
        const { inputTokens, outputTokens } = completion.usage;
        const usage = { input_tokens: inputTokens, output_tokens: outputTokens };
        progress.log(LogKind.THINKING, text, { step, usage });
      }
      if (completion.toolCalls.length === 0) {
        progress.report('info', `finished after ${step} step(s)`);
        return text;
      }
      messages.push(Message.assistant(text, completion.toolCalls));
      for (const call of completion.toolCalls) {
        if (ctx.stopRequested()) throw stopped(ctx);
        messages.push(Message.tool(call.id, this.callTool(ctx, tools, call)));
      }
    }
    const message = `gave up after ${this.steps} steps without a final answer (the step cap)`;
    progress.report('info', message);
    throw new AgentFailed(message);
  }

  offered(ctx) {
    const tools = [...this.tools];
    if (!this.accountTools_) return tools;
    const ours = new Set(tools.map((t) => t.name));
    return [...tools, ...ctx.tools.list().filter((t) => !ours.has(t.name))];
  }

  callTool(ctx, tools, call) {
    const progress = ctx.progress;
    progress.report('tool_use', call.name);
    let args;
    try {
      args = JSON.parse(call.argumentsJson);
    } catch {
      args = call.argumentsJson;
    }
    progress.log(LogKind.TOOL_USE, call.name, { id: call.id, name: call.name, arguments: args });
    const offered = tools.some((t) => t.name === call.name);
    const own = this.own.get(call.name);
    let result;
    if (own !== undefined) {
      result = runOwn(call, own);
    } else if (offered && isMemoryTool(call.name)) {
      result = callMemoryTool(ctx.memory, call);
    } else if (offered) {
      try {
        result = ctx.tools.callJson(call.name, call.argumentsJson);
      } catch (e) {
        result = `Tool ${call.name} failed: ${e.message ?? e}`;
      }
    } else {
      const names = tools.map((t) => t.name).join(', ');
      result = `Unknown tool ${JSON.stringify(call.name)}: the tools available are ${names}.`;
    }
    progress.log(LogKind.TOOL_RESULT, result, { id: call.id, name: call.name });
    return result;
  }
}

function runOwn(call, run) {
  let args;
  try {
    args = JSON.parse(call.argumentsJson);
  } catch (e) {
    return `Tool ${call.name} failed: the arguments are not valid JSON (${e.message})`;
  }
  try {
    return run(args);
  } catch (e) {
    return `Tool ${call.name} failed: ${e.message ?? e}`;
  }
}

function stopped(ctx) {
  ctx.progress.report('info', 'stopped on request');
  return new AgentFailed(STOPPED);
}

function preview(text, limit) {
  return text.length <= limit ? text : `${text.slice(0, limit)}…`;
}
