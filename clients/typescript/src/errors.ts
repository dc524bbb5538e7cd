/**
 * The one error type of the client: every answer that is not a success, as the server's
 * error envelope `{ "error": { "code", "message", "details"? } }` says it.
 */
export class WasmindError extends Error {
  override readonly name = "WasmindError";

  constructor(
    /** The HTTP status of the answer. */
    readonly status: number,
    /** The stable identifier to branch on, e.g. `not_found`, `rate_limited`. */
    readonly code: string,
    message: string,
    /** Structured context the route describes (`field`, `parameter`, `limit`, …), if any. */
    readonly details: Record<string, unknown> | undefined,
    /** Seconds the server asked to wait before trying again (`Retry-After`), if it did. */
    readonly retryAfter: number | undefined,
    /** The request's `x-request-id`, which a 500's message and the server log quote. */
    readonly requestId: string | undefined,
  ) {
    super(message);
  }

  /** Reads an error answer; one that is not the envelope (a proxy's page) keeps its status. */
  static async from(response: Response): Promise<WasmindError> {
    const text = await response.text();
    const retryAfter = parseRetryAfter(response.headers.get("retry-after"));
    const requestId = response.headers.get("x-request-id") ?? undefined;
    const error = envelope(text);
    if (error === undefined) {
      const what = text.trim().slice(0, 200) || response.statusText;
      return new WasmindError(
        response.status,
        "unexpected_response",
        `HTTP ${response.status} without the error envelope: ${what}`,
        undefined,
        retryAfter,
        requestId,
      );
    }
    return new WasmindError(response.status, error.code, error.message, error.details, retryAfter, requestId);
  }
}

interface ErrorBody {
  code: string;
  message: string;
  details: Record<string, unknown> | undefined;
}

function envelope(text: string): ErrorBody | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const error = isObject(parsed) ? parsed["error"] : undefined;
  if (!isObject(error) || typeof error["code"] !== "string" || typeof error["message"] !== "string") {
    return undefined;
  }
  const details = error["details"];
  return { code: error["code"], message: error["message"], details: isObject(details) ? details : undefined };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `Retry-After` as seconds: a number of seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfter(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === "") {
    return undefined;
  }
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) {
    return Number(trimmed);
  }
  // An HTTP date is always in GMT (IMF-fixdate, or the obsolete forms, which also end so).
  const date = trimmed.endsWith("GMT") ? Date.parse(trimmed) : Number.NaN;
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}
