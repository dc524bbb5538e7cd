// Write wasmind agents in JavaScript or TypeScript (checked through these JSDoc types).
//
// An agent is a function `run(ctx, task)`: it receives its task (the user's message) and
// returns its final answer, or throws `AgentFailed` with why it could not produce one.
// Everything it can do beyond computing goes through the `Context`: the Mind (`ctx.mind`,
// chat completion with tool calls), the account's long-term memory (`ctx.memory`), the
// tools the account registered (`ctx.tools`), progress reports and log events
// (`ctx.progress`), `ctx.stopRequested()`, and the web (`await ctx.fetch(url)`, through the
// host's egress door; an agent that fetches is `async`).
//
// `bin/build.js` makes the module exporting `run` a component of the `wasmind:agent` world
// (through `host.js`); natively (`node --test`), the same code runs against `testing.js`'s
// doubles, and `checkReplay` checks it survives a restart.

export { Context, Memory, Mind, Progress, Tools } from './context.js';
export * as limits from './limits.js';
export {
  DELETE,
  GET,
  LIST,
  MEMORY_TOOL_NAMES,
  PUT,
  SEARCH,
  callMemoryTool,
  isMemoryTool,
  memoryTools,
} from './memory_tools.js';
export { STOPPED, ToolLoop } from './tool_loop.js';
export {
  AgentFailed,
  Completion,
  LogKind,
  MemoryServiceError,
  Message,
  MindError,
  ToolError,
  WasmindError,
  toolCall,
} from './types.js';
