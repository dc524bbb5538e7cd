/** The agents API (`/api/v1/agents…`, §4.3): spawn, read, list, stop, logs, following a run, and where agents may reach. */
import { type FollowEvent, type FollowOptions, follow } from "./follow.js";
import { paginate } from "./paginate.js";
import type { Transport } from "./transport.js";
import type {
  Agent,
  AgentList,
  AgentLogEvent,
  AgentLogPage,
  EgressList,
  SpawnedAgent,
  SpawnRequest,
  StopResult,
} from "./types.js";

export interface PageOptions {
  /** Page size (agents: default 20, capped at 100; logs: default 100, capped at 1,000). */
  limit?: number;
}

export interface CursorOptions extends PageOptions {
  /** The `next_cursor` of the page before. */
  cursor?: string;
}

export class AgentsApi {
  constructor(private readonly transport: Transport) {}

  /** Starts an agent on `task`; it answers at once with status `spawning`. */
  spawn(request: SpawnRequest): Promise<SpawnedAgent> {
    return this.transport.call("post", "/api/v1/agents", { body: request });
  }

  /** The agent's record, progress included. Throws `agent_not_found` for an unknown id. */
  get(id: string): Promise<Agent> {
    return this.transport.call("get", "/api/v1/agents/{id}", { path: { id } });
  }

  /** Every agent of the account, newest first, fetched page by page as iterated. */
  list(options: PageOptions = {}): AsyncGenerator<Agent, void, undefined> {
    return paginate((cursor) => this.listPage({ ...options, cursor }));
  }

  /** One page of agents; pass its `next_cursor` as `cursor` for the next. */
  listPage(options: CursorOptions = {}): Promise<AgentList> {
    return this.transport.call("get", "/api/v1/agents", { query: { limit: options.limit, cursor: options.cursor } });
  }

  /** Stops a live agent at once; a finished one is left as it is. */
  stop(id: string): Promise<StopResult> {
    return this.transport.call("delete", "/api/v1/agents/{id}", { path: { id } });
  }

  /** Every log event of the agent so far, oldest first, fetched page by page as iterated. */
  logs(id: string, options: PageOptions = {}): AsyncGenerator<AgentLogEvent, void, undefined> {
    return paginate((cursor) => this.logsPage(id, { ...options, cursor }));
  }

  /** One page of the agent's log; pass its `next_cursor` as `cursor` for the next. */
  logsPage(id: string, options: CursorOptions = {}): Promise<AgentLogPage> {
    return this.transport.call("get", "/api/v1/agents/{id}/logs", {
      path: { id },
      query: { limit: options.limit, cursor: options.cursor },
    });
  }

  /** The hosts the account's agents may send HTTP requests to, each with the list it is on; every other request is refused. */
  egress(): Promise<EgressList> {
    return this.transport.call("get", "/api/v1/egress", {});
  }

  /**
   * Follows the agent until it ends by polling its record (the API has no streaming):
   * yields each new progress entry once, then `{ type: "end", agent }` with the final record.
   */
  follow(id: string, options: FollowOptions = {}): AsyncGenerator<FollowEvent, void, undefined> {
    return follow(() => this.get(id), options);
  }
}
