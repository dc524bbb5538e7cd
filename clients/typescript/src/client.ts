import { AgentsApi } from "./agents.js";
import { ComponentsApi } from "./components.js";
import { MemoryApi } from "./memory.js";
import { ToolsApi } from "./tools.js";
import { Transport, type TransportOptions } from "./transport.js";

export type WasmindOptions = TransportOptions;

/**
 * A client of one wasmind server with one API key: `memory`, `agents`, `components` and
 * `tools`.
 * Failed calls throw {@link WasmindError}; 429 and 503 answers are retried as
 * `Retry-After` says, within `retry`'s bounds.
 */
export class Wasmind {
  readonly memory: MemoryApi;
  readonly agents: AgentsApi;
  readonly components: ComponentsApi;
  readonly tools: ToolsApi;
  private readonly transport: Transport;

  constructor(options: WasmindOptions) {
    this.transport = new Transport(options);
    this.memory = new MemoryApi(this.transport);
    this.agents = new AgentsApi(this.transport);
    this.components = new ComponentsApi(this.transport);
    this.tools = new ToolsApi(this.transport);
  }

  /** The server's OpenAPI document (`GET /api/v1/openapi.json`), the contract these types come from. */
  openapi(): Promise<Record<string, unknown>> {
    return this.transport.call("get", "/api/v1/openapi.json", {});
  }
}
