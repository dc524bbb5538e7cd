/**
 * The tools API (`/api/v1/tools…`): the tools the account's agents may call, HTTP endpoints
 * and remote MCP servers. Secrets (`secret_header.value`, an MCP server's `bearer`) are
 * write-only: no answer holds them, only `has_secret`.
 */
import type { Transport } from "./transport.js";
import type { Tool, ToolRequest } from "./types.js";

export class ToolsApi {
  constructor(private readonly transport: Transport) {}

  /**
   * Registers a tool, the body as the API takes it: `{ kind: "http", name, description,
   * parameters, endpoint: { url, method? }, timeout_secs?, secret_header?: { name, value } }`
   * or `{ kind: "mcp", name, url, bearer?, description?, timeout_secs? }`. Throws
   * `tool_exists` (409) for a taken name, `tool_quota_exceeded` past the plan's bound.
   */
  register(tool: ToolRequest): Promise<Tool> {
    return this.transport.call("post", "/api/v1/tools", { body: tool });
  }

  /** Every tool of the account, by name (one answer: the plan bounds how many). */
  async list(): Promise<Tool[]> {
    return (await this.transport.call("get", "/api/v1/tools", {})).data;
  }

  /** The tool. Throws `tool_not_found` (404) when the account has none so named. */
  get(name: string): Promise<Tool> {
    return this.transport.call("get", "/api/v1/tools/{name}", { path: { name } });
  }

  /** Deletes the tool and returns it as it was; agents stop seeing it at their next listing. */
  delete(name: string): Promise<Tool> {
    return this.transport.call("delete", "/api/v1/tools/{name}", { path: { name } });
  }

  /**
   * Lists an MCP server's tools anew: its record then holds `tools` and `listed_at`, or
   * `list_error` with the tools listed before. An HTTP tool throws `not_an_mcp_server`.
   */
  refresh(name: string): Promise<Tool> {
    return this.transport.call("post", "/api/v1/tools/{name}/refresh", { path: { name } });
  }

  /**
   * Calls the tool as an agent would (an MCP server's tool by its `mcp_<server>_<tool>`
   * name) and returns its result text. Throws `invalid_arguments` for arguments that do not
   * fit its `parameters`, `tool_denied` when the egress policy refuses the request
   * (`details.rule`), `http_budget_exceeded` when the month's HTTP budget is spent,
   * `tool_failed` when the tool failed. It counts in the plan's HTTP budgets.
   */
  async call(name: string, args: Record<string, unknown> = {}): Promise<string> {
    const answer = await this.transport.call("post", "/api/v1/tools/{name}/call", {
      path: { name },
      body: { arguments: args },
    });
    return answer.result;
  }
}
