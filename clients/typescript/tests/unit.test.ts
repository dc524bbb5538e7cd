/** The parts of the client that need no server: reading Retry-After, and which progress is new. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { format, inspect } from "node:util";

import { parseRetryAfter } from "../src/errors.js";
import { fresh } from "../src/follow.js";
import { type AgentProgress, Wasmind } from "../src/index.js";

test("Retry-After is read as seconds or as an HTTP date", () => {
  assert.equal(parseRetryAfter("5"), 5);
  assert.equal(parseRetryAfter(" 0 "), 0);
  const now = Date.parse("2026-11-26T06:00:00Z");
  assert.equal(parseRetryAfter("Thu, 26 Nov 2026 06:00:03 GMT", now), 3);
  assert.equal(parseRetryAfter("Thu, 26 Nov 2026 05:59:00 GMT", now), 0);
  assert.equal(parseRetryAfter(null), undefined);
  assert.equal(parseRetryAfter("soon"), undefined);
  assert.equal(parseRetryAfter("-1"), undefined);
});

const entry = (ts: number, message = `m${ts}`): AgentProgress => ({ ts, kind: "info", message });

test("only the entries a poll added are new", () => {
  const [a, b, c, d] = [entry(1), entry(2), entry(3), entry(4)];
  assert.deepEqual(fresh([], [a, b]), [a, b]);
  assert.deepEqual(fresh([a, b], [a, b]), []);
  assert.deepEqual(fresh([a, b], [a, b, c, d]), [c, d]);
});

test("entries the server dropped from the front do not make old ones new again", () => {
  const [a, b, c, d] = [entry(1), entry(2), entry(3), entry(4)];
  assert.deepEqual(fresh([a, b, c], [b, c, d]), [d]);
  assert.deepEqual(fresh([a, b, c], [c, d]), [d]);
  // Everything seen was dropped: what is left is all new.
  assert.deepEqual(fresh([a, b], [c, d]), [c, d]);
});

test("identical entries in a row are each passed on once", () => {
  const same = entry(7, "tick");
  assert.deepEqual(fresh([same], [same, { ...same }]), [same]);
  assert.deepEqual(fresh([same, same], [same, same, same]), [same]);
});

test("a client logged or inspected whole shows its key redacted, and still sends it", async () => {
  const key = "wm_secret_key_value";
  const sent: string[] = [];
  const fetch: typeof globalThis.fetch = async (_input, init) => {
    sent.push(new Headers(init?.headers).get("authorization") ?? "");
    return new Response(JSON.stringify({ openapi: "3.1.0" }), {
      headers: { "content-type": "application/json" },
    });
  };
  const client = new Wasmind({ baseUrl: "http://127.0.0.1:9", apiKey: key, fetch, headers: { "x-request-id": "r1" } });
  const shown = [
    inspect(client, { depth: Infinity, showHidden: true }),
    format("%o", client), // what console.log prints for an object
    format("%s %j", client, client),
    JSON.stringify(client.memory),
  ];
  for (const text of shown) {
    assert.ok(!text.includes(key), text);
  }
  assert.match(shown[0] ?? "", /<redacted>/);
  assert.match(shown[0] ?? "", /x-request-id/, "the other headers still show");
  await client.openapi();
  assert.deepEqual(sent, [`Bearer ${key}`]);
});

