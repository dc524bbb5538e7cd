/**
 * Retries on 429 and 503 honour Retry-After, can be turned off, and wait no longer than
 * allowed in all. The 429 is the server's own: a consolidation that wrote something starts
 * the account's cooldown (`[memory] consolidate_cooldown_secs`), during which the next one
 * is refused with `rate_limited` and `Retry-After` the seconds left.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";

import { type Wasmind, WasmindError } from "../src/index.js";
import { recorder } from "./support/recorder.js";
import { Server } from "./support/server.js";

const COOLDOWN_SECS = 3;
const server = await Server.start({ config: `[memory]\nconsolidate_cooldown_secs = ${COOLDOWN_SECS}\n` });
after(() => server.stop());

/** Consolidates two related memories of a new account, which starts its cooldown. */
async function cooledDown(account: string): Promise<string> {
  const key = server.createKey(account);
  const { memory } = server.client(key);
  await memory.put({ key: "coffee", value: "the user drinks black coffee every morning" });
  await memory.put({ key: "coffee_time", value: "the user drinks coffee every morning at seven" });
  const done = await memory.consolidate({ min_cluster_size: 2, threshold: 0.5 });
  assert.equal(done.consolidated.length, 1, "the first consolidation wrote a summary");
  return key;
}

async function refusal(client: Wasmind): Promise<WasmindError> {
  const error = await client.memory.consolidate({ min_cluster_size: 2, threshold: 0.5 }).then(
    () => assert.fail("the cooldown did not refuse"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof WasmindError);
  return error;
}

test("with retries off, a 429 is thrown at once with its Retry-After", async () => {
  const { fetch, statuses } = recorder();
  const client = server.client(await cooledDown("off"), { fetch, retry: false });
  const error = await refusal(client);
  assert.equal(error.status, 429);
  assert.equal(error.code, "rate_limited");
  assert.equal(error.details?.["reason"], "cooldown");
  assert.ok(error.retryAfter !== undefined && error.retryAfter >= 1 && error.retryAfter <= COOLDOWN_SECS, String(error.retryAfter));
  assert.deepEqual(statuses, [429]);
});

test("a retry waits as long as Retry-After says, then succeeds", async () => {
  const { fetch, statuses } = recorder();
  const client = server.client(await cooledDown("on"), { fetch });
  const started = Date.now();
  const result = await client.memory.consolidate({ min_cluster_size: 2, threshold: 0.5 });
  const waited = Date.now() - started;
  assert.deepEqual(statuses, [429, 200]);
  assert.equal(result.consolidated.length, 0, "the summary is all that is left");
  // Not sooner than the server asked (it rounds the seconds left up).
  assert.ok(waited >= (COOLDOWN_SECS - 1) * 1000, `retried after ${waited} ms`);
});

test("a wait past the bound on the total is not begun", async () => {
  const { fetch, statuses } = recorder();
  const client = server.client(await cooledDown("bounded"), { fetch, retry: { maxWaitMs: 500 } });
  const error = await refusal(client);
  assert.equal(error.code, "rate_limited");
  assert.deepEqual(statuses, [429]);

  const none = server.client(await cooledDown("no_retries"), { fetch, retry: { maxRetries: 0 } });
  statuses.length = 0;
  assert.equal((await refusal(none)).code, "rate_limited");
  assert.deepEqual(statuses, [429]);
});
