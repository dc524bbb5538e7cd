// What an agent can do beyond computing, in one object: `ctx.mind`, `ctx.memory`,
// `ctx.progress`, `ctx.tools`, `ctx.stopRequested()` and `ctx.fetch()`. All of it goes through one
// `Backend`: the host's imports in the component (`host.js`), the doubles of `testing.js`
// natively, or the replay check's tape around either.

/**
 * The host calls of the `wasmind:agent` world, one method each. Failures throw
 * `MindError`, `MemoryServiceError` or `ToolError`.
 * @typedef {object} Backend
 * @property {(messages: import('./types.js').Message[], tools: import('./types.js').ToolSpec[]) => import('./types.js').Completion} complete
 * @property {(request: import('./types.js').PutRequest) => import('./types.js').PutResult} memoryPut
 * @property {(key: string, namespace?: string) => import('./types.js').MemoryRecord | undefined} memoryGet
 * @property {(request: import('./types.js').ListRequest) => import('./types.js').MemoryRecord[]} memoryList
 * @property {(key: string, namespace?: string) => void} memoryDelete
 * @property {(request: import('./types.js').SearchRequest) => import('./types.js').SearchHit[]} memorySearch
 * @property {(kind: string, message: string) => void} report
 * @property {(kind: import('./types.js').LogKind, message: string, dataJson?: string) => void} log
 * @property {() => import('./types.js').ToolSpec[]} toolsList
 * @property {(name: string, argumentsJson: string) => string} toolsCall
 * @property {() => boolean} stopRequested
 * @property {(url: string, init?: RequestInit) => Promise<Fetched>} fetch
 */

/**
 * An HTTP answer as the backend gives it: plain data, so the replay check can record it
 * and answer a replayed `fetch` with a fresh `Response` of it.
 * @typedef {{ status: number, statusText: string, headers: [string, string][], body: string }} Fetched
 */

/** Chat completion with tool calls: how an agent thinks. */
export class Mind {
  /** @param {Backend} backend */
  constructor(backend) {
    this.backend = backend;
  }

  /** The Mind's next step. Blocks until it answers; throws `MindError` when it fails (after
   * the host's retries) or a stop is requested (`kind === 'stopped'`). */
  complete(messages, tools = []) {
    return this.backend.complete([...messages], [...tools]);
  }
}

/** The account's long-term memory: the memory HTTP API's operations, defaults and limits.
 * Failures throw `MemoryServiceError`; the run goes on. */
export class Memory {
  /** @param {Backend} backend */
  constructor(backend) {
    this.backend = backend;
  }

  put(request) {
    return this.backend.memoryPut(request);
  }

  /** `undefined` when no live memory has that key; counts an access. */
  get(key, namespace) {
    return this.backend.memoryGet(key, namespace);
  }

  list(request = {}) {
    return this.backend.memoryList(request);
  }

  /** A soft delete. */
  delete(key, namespace) {
    this.backend.memoryDelete(key, namespace);
  }

  search(request) {
    return this.backend.memorySearch(request);
  }
}

/** What the agent tells its caller while it works. */
export class Progress {
  /** @param {Backend} backend */
  constructor(backend) {
    this.backend = backend;
  }

  /** A progress entry on the agent record (`kind` such as `info` or `tool_use`). */
  report(kind, message) {
    this.backend.report(kind, message);
  }

  /** An event on the agent's log stream, with optional structured detail. */
  log(kind, message, data) {
    this.backend.log(kind, message, data === undefined ? undefined : JSON.stringify(data));
  }
}

/** The tools the account registered, called by the host (their secrets stay there). */
export class Tools {
  /** @param {Backend} backend */
  constructor(backend) {
    this.backend = backend;
  }

  /** The tools offered to this agent, ready to pass to `Mind.complete`. */
  list() {
    return this.backend.toolsList();
  }

  /** The result text; throws `ToolError`. */
  call(name, args) {
    return this.callJson(name, JSON.stringify(args));
  }

  callJson(name, argumentsJson) {
    return this.backend.toolsCall(name, argumentsJson);
  }
}

/** The agent's view of the host, handed to its `run(ctx, task)`. */
export class Context {
  /** @param {Backend} backend */
  constructor(backend) {
    this.backend = backend;
    this.mind = new Mind(backend);
    this.memory = new Memory(backend);
    this.progress = new Progress(backend);
    this.tools = new Tools(backend);
  }

  /** True once a stop was requested: finish promptly (the host interrupts the agent about
   * 10 seconds later). */
  stopRequested() {
    return this.backend.stopRequested();
  }

  /** The standard `fetch`, through the backend: in the component it is `wasi:http` (the
   * host's egress door decides, and journals the answer); natively, the doubles answer and
   * `checkReplay` records it. The body is read whole, as text. An agent that calls `fetch`
   * must be `async`.
   * @param {string} url @param {RequestInit} [init] @returns {Promise<Response>} */
  async fetch(url, init) {
    const { status, statusText, headers, body } = await this.backend.fetch(url, init);
    // A status without a body (204, 304) takes none.
    const nobody = [101, 204, 205, 304].includes(status);
    return new Response(nobody ? null : body, { status, statusText, headers });
  }
}
