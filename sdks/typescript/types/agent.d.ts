/// <reference path="./interfaces/wasmind-agent-control.d.ts" />
/// <reference path="./interfaces/wasmind-agent-memory.d.ts" />
/// <reference path="./interfaces/wasmind-agent-mind.d.ts" />
/// <reference path="./interfaces/wasmind-agent-progress.d.ts" />
/// <reference path="./interfaces/wasmind-agent-tools.d.ts" />
declare module 'wasmind:agent/agent@0.1.0' {
  export type * as WasmindAgentControl010 from 'wasmind:agent/control@0.1.0'; // import wasmind:agent/control@0.1.0
  export type * as WasmindAgentMemory010 from 'wasmind:agent/memory@0.1.0'; // import wasmind:agent/memory@0.1.0
  export type * as WasmindAgentMind010 from 'wasmind:agent/mind@0.1.0'; // import wasmind:agent/mind@0.1.0
  export type * as WasmindAgentProgress010 from 'wasmind:agent/progress@0.1.0'; // import wasmind:agent/progress@0.1.0
  export type * as WasmindAgentTools010 from 'wasmind:agent/tools@0.1.0'; // import wasmind:agent/tools@0.1.0
  export function run(task: string): string;
  export type Result<T, E> = { tag: 'ok', val: T } | { tag: 'err', val: E };
}
