/**
 * One typed HTTP call of the API, with the retries the specification asks for (§7: wait
 * `Retry-After` on 429, back off on 503). The path, its parameters, its body and its
 * answer's type all come from the generated OpenAPI types, so code that no longer matches
 * the server's document does not compile.
 */
import { WasmindError } from "./errors.js";
import type { paths } from "./generated/openapi.js";

/** How the client retries answers that ask for it. */
export interface RetryOptions {
  /** Retries after the first try (default 3). */
  maxRetries?: number;
  /**
   * The most the client waits in all, in milliseconds, over one call's retries (default
   * 30,000). A wait that would pass it is not begun: the error is thrown at once.
   */
  maxWaitMs?: number;
}

export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  /** `false` turns retries off: a 429 or 503 is thrown at once. */
  retry?: RetryOptions | false;
  /** The `fetch` to use (default: the global one). */
  fetch?: typeof fetch;
  /** Headers sent with every request (e.g. `x-request-id`). */
  headers?: Record<string, string>;
}

type Method = "get" | "post" | "delete";

/** The operation at `P` with method `M`. */
export type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M & keyof paths[P]]>;

type Json<R> = R extends { content: { "application/json": infer T } } ? T : never;

/** The body of a 2xx answer (a union when the operation has two, e.g. put's 200 and 201). */
export type Success<O> = O extends { responses: infer R }
  ? { [S in keyof R]: S extends 200 | 201 | 204 ? Json<R[S]> : never }[keyof R]
  : never;

type Query<O> = O extends { parameters: { query?: infer Q } } ? Q : never;
type PathParams<O> = O extends { parameters: { path: infer Q } } ? Q : never;
type JsonBody<O> = O extends { requestBody?: infer B }
  ? B extends { content: { "application/json": infer T } }
    ? T
    : never
  : never;

/** What one call sends: each part exists only where the operation has it. */
export type Request<O> = ([PathParams<O>] extends [never] ? { path?: never } : { path: PathParams<O> }) &
  ([Query<O>] extends [never] ? { query?: never } : { query?: Query<O> }) &
  ([JsonBody<O>] extends [never]
    ? { body?: never; raw?: { body: BodyInit; contentType: string } }
    : { body: JsonBody<O>; raw?: never });

const RETRIED = new Set([429, 503]);

const REDACTED = "<redacted>";

/**
 * The API key, kept where `console.log`, `util.inspect` and `JSON.stringify` do not look (a
 * private field): they show it redacted, so a client logged whole never leaks it.
 */
class ApiKey {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  /** The `authorization` header that sends it. */
  bearer(): string {
    return `Bearer ${this.#value}`;
  }

  toJSON(): string {
    return REDACTED;
  }

  toString(): string {
    return REDACTED;
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return REDACTED;
  }
}

export class Transport {
  private readonly baseUrl: string;
  private readonly retry: Required<RetryOptions> | false;
  private readonly fetch: typeof fetch;
  private readonly headers: Record<string, string>;
  private readonly apiKey: ApiKey;

  constructor(options: TransportOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.retry = options.retry === false ? false : { maxRetries: 3, maxWaitMs: 30_000, ...options.retry };
    // Bound to the global object: a browser's fetch refuses to be called on another.
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.headers = { ...options.headers };
    this.apiKey = new ApiKey(options.apiKey);
  }

  /** Calls `method path` and returns the answer's JSON, or throws a {@link WasmindError}. */
  async call<P extends keyof paths, M extends Method>(
    method: M,
    path: P,
    request: Request<Operation<P, M>>,
  ): Promise<Success<Operation<P, M>>> {
    const url = this.url(path, request);
    const init = this.init(method, request);
    let waited = 0;
    for (let attempt = 0; ; attempt++) {
      const response = await this.fetch(url, init);
      if (response.ok) {
        return (await response.json()) as Success<Operation<P, M>>;
      }
      const error = await WasmindError.from(response);
      const wait = this.waitBefore(attempt, waited, error);
      if (wait === undefined) {
        throw error;
      }
      await sleep(wait);
      waited += wait;
    }
  }

  /** How long to wait before retry `attempt + 1`, or `undefined` when there is none. */
  private waitBefore(attempt: number, waited: number, error: WasmindError): number | undefined {
    if (this.retry === false || !RETRIED.has(error.status) || attempt >= this.retry.maxRetries) {
      return undefined;
    }
    // The server's own word, else the specification's backoff: 1 s, 2 s, 4 s, …
    const wait = error.retryAfter !== undefined ? error.retryAfter * 1000 : 1000 * 2 ** attempt;
    return waited + wait > this.retry.maxWaitMs ? undefined : wait;
  }

  private url(path: string, request: { path?: object; query?: object }): string {
    const params = (request.path ?? {}) as Record<string, string>;
    const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(params[name])));
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined && value !== null) {
        query.append(name, String(value));
      }
    }
    const search = query.toString();
    return `${this.baseUrl}${filled}${search === "" ? "" : `?${search}`}`;
  }

  private init(method: Method, request: { body?: unknown; raw?: { body: BodyInit; contentType: string } }): RequestInit {
    const headers: Record<string, string> = {
      ...this.headers,
      authorization: this.apiKey.bearer(),
      accept: "application/json",
    };
    let body: BodyInit | undefined;
    if (request.raw !== undefined) {
      headers["content-type"] = request.raw.contentType;
      body = request.raw.body;
    } else if (request.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(request.body);
    }
    return { method: method.toUpperCase(), headers, body };
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
