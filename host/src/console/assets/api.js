// The console API client: the ID token kept in sessionStorage, JSON calls under /api/v1/
// with it as a bearer token in the Authorization header (never a cookie, so no other site's
// page can send it) — the public REST routes, which take it as they take an API key, and
// the console's own under console/ — and the spec's error envelope turned into an
// ApiError. A 401 forgets the token and tells the page to sign in again.

const TOKEN_KEY = 'wasmind.id_token';
const BASE = '/api/v1/';

/** An error answer of the API: HTTP status, the envelope's code and message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const token = () => sessionStorage.getItem(TOKEN_KEY);
export const setToken = (value) => sessionStorage.setItem(TOKEN_KEY, value);
export const clearToken = () => sessionStorage.removeItem(TOKEN_KEY);

let unauthorized = () => {};
/** Calls `handler(message)` whenever the API refuses the token. */
export function onUnauthorized(handler) {
  unauthorized = handler;
}

/** Calls the API at `path` under /api/v1/; resolves to the parsed JSON answer, rejects with ApiError. */
export async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token() ?? ''}` };
  const init = { method, headers };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(BASE + path, init);
  const data = await res.json().catch(() => null);
  if (res.ok) return data;
  const error = data?.error ?? { code: `http_${res.status}`, message: res.statusText };
  if (res.status === 401) {
    clearToken();
    unauthorized(error.message);
  }
  throw new ApiError(res.status, error.code, error.message);
}

/** A query string from the entries whose value is set. */
export function query(params) {
  const set = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '');
  return set.length ? `?${new URLSearchParams(set)}` : '';
}

/** The SSE URL of one agent: EventSource cannot send headers, so the token rides along. */
export function eventsUrl(agentId) {
  return `${BASE}console/agents/${encodeURIComponent(agentId)}/events${query({ id_token: token() })}`;
}
