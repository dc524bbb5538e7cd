/** The memory API through the client, against the real server: every operation and its errors. */
import assert from "node:assert/strict";
import { after, test } from "node:test";

import { WasmindError } from "../src/index.js";
import { recorder } from "./support/recorder.js";
import { Server } from "./support/server.js";

const server = await Server.start();
after(() => server.stop());

test("a put creates, an identical put writes nothing, a new value is a new version", async () => {
  const memory = server.client(server.createKey("versions")).memory;
  const first = await memory.put({ key: "favourite_food", value: "pizza", tags: ["food"], importance: 7 });
  assert.match(first.memory_id, /^mem_/);
  assert.equal(first.version, 1);
  assert.deepEqual(first.tags, ["food"]);
  assert.equal(first.importance, 7);
  const again = await memory.put({ key: "favourite_food", value: "pizza" });
  assert.equal(again.memory_id, first.memory_id);
  const second = await memory.put({ key: "favourite_food", value: "pizza with mushrooms" });
  assert.equal(second.version, 2);
  assert.notEqual(second.memory_id, first.memory_id);

  const got = await memory.get("favourite_food");
  assert.equal(got.value, "pizza with mushrooms");
  assert.equal((await memory.get("favourite_food")).access_count, got.access_count + 1);

  const history = await collect(memory.history("favourite_food"));
  assert.deepEqual(
    history.map((m) => [m.version, m.value, m.isLatestVersion]),
    [
      [2, "pizza with mushrooms", true],
      [1, "pizza", false],
    ],
  );
});

test("namespaces keep keys apart, and list their live counts", async () => {
  const memory = server.client(server.createKey("namespaces")).memory;
  await memory.put({ key: "city", value: "Lisbon" });
  await memory.put({ key: "city", value: "Porto", namespace: "work" });
  await memory.put({ key: "desk", value: "third floor", namespace: "work" });
  assert.equal((await memory.get("city", { namespace: "work" })).value, "Porto");
  assert.equal((await memory.get("city")).value, "Lisbon");
  const { namespaces } = await memory.namespaces();
  assert.deepEqual(
    namespaces.map((n) => [n.namespace, n.count]).sort(),
    [
      ["default", 1],
      ["work", 2],
    ],
  );
});

test("a soft delete keeps history, a hard delete removes every version", async () => {
  const memory = server.client(server.createKey("deletes")).memory;
  await memory.put({ key: "plan", value: "draft" });
  await memory.put({ key: "plan", value: "final" });
  const soft = await memory.delete("plan");
  assert.equal(soft.hard, false);
  assert.equal(soft.memory?.value, "final");
  assert.notEqual(soft.memory?.deletedAt, null);
  await assert.rejects(memory.get("plan"), (e: unknown) => e instanceof WasmindError && e.code === "not_found" && e.status === 404);
  assert.equal((await collect(memory.history("plan"))).length, 2);

  const hard = await memory.delete("plan", { hard: true });
  assert.equal(hard.hard, true);
  assert.equal(hard.versions_removed, 2);
  await assert.rejects(collect(memory.history("plan")), { code: "not_found" });
  await assert.rejects(memory.historyPage("plan"), { code: "not_found" });
});

test("errors carry the server's code, message, details and request id", async () => {
  const memory = server.client(server.createKey("errors")).memory;
  const error = await memory.put({ key: "Not Snake", value: "x" }).then(
    () => assert.fail("a bad key was accepted"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof WasmindError);
  assert.ok(error instanceof Error);
  assert.equal(error.status, 400);
  assert.equal(error.code, "invalid_key");
  assert.match(error.message, /key/);
  assert.deepEqual(error.details, { field: "key" });
  assert.equal(error.retryAfter, undefined);
  assert.match(error.requestId ?? "", /./);

  await assert.rejects(memory.get("nothing_here", { namespace: "x\u0001" }), { code: "invalid_query", status: 400 });
  await assert.rejects(server.client("wm_not_a_key").memory.namespaces(), { code: "invalid_api_key", status: 401 });
});

test("search finds a memory by meaning", async () => {
  const memory = server.client(server.createKey("search")).memory;
  await memory.put({ key: "favourite_food", value: "pizza with mushrooms" });
  await memory.put({ key: "commute", value: "takes the train to work at eight" });
  await memory.put({ key: "pet", value: "has a grey cat called Miso", namespace: "home" });
  const { results } = await memory.search({ query: "what does the user like to eat?" });
  assert.equal(results[0]?.key, "favourite_food");
  assert.ok((results[0]?.score ?? 0) > 0);
  const home = await memory.search({ query: "animals", namespace: "home", mode: "semantic", limit: 5 });
  assert.deepEqual(
    home.results.map((r) => r.key),
    ["pet"],
  );
  const reranked = await memory.search({ query: "what does the user like to eat?", rerank: true });
  assert.equal(reranked.results[0]?.key, "favourite_food");
  assert.ok(reranked.results.every((r) => r.score === r.breakdown.rerank));
  assert.equal(results[0]?.breakdown.rerank, undefined);
});

test("list iterates every live memory across pages, newest first, filtered by tags", async () => {
  const { fetch, calls } = recorder();
  const memory = server.client(server.createKey("pages"), { fetch }).memory;
  for (let i = 0; i < 7; i++) {
    await memory.put({ key: `note_${i}`, value: `note number ${i}`, tags: i % 2 === 0 ? ["even"] : [] });
  }
  calls.length = 0;
  const keys: string[] = [];
  for await (const m of memory.list({ limit: 3 })) {
    keys.push(m.key);
  }
  assert.deepEqual(keys, ["note_6", "note_5", "note_4", "note_3", "note_2", "note_1", "note_0"]);
  assert.equal(calls.length, 3, calls.join("\n"));

  const even: string[] = [];
  for await (const m of memory.list({ tags: ["even"], limit: 2 })) {
    even.push(m.key);
  }
  assert.deepEqual(even, ["note_6", "note_4", "note_2", "note_0"]);

  const page = await memory.listPage({ limit: 5 });
  assert.equal(page.data.length, 5);
  assert.equal(typeof page.next_cursor, "string");
  const rest = await memory.listPage({ limit: 5, cursor: page.next_cursor ?? undefined });
  assert.equal(rest.data.length, 2);
  assert.equal(rest.next_cursor, null);

  // Leaving early fetches no further page.
  calls.length = 0;
  for await (const m of memory.list({ limit: 2 })) {
    assert.equal(m.key, "note_6");
    break;
  }
  assert.equal(calls.length, 1);
});

test("history iterates every version across pages, newest first", async () => {
  const { fetch, calls } = recorder();
  const memory = server.client(server.createKey("history_pages"), { fetch }).memory;
  for (let i = 1; i <= 5; i++) {
    await memory.put({ key: "status", value: `status number ${i}`, namespace: "team" });
  }
  calls.length = 0;
  const versions: number[] = [];
  for await (const m of memory.history("status", { namespace: "team", limit: 2 })) {
    versions.push(m.version);
  }
  assert.deepEqual(versions, [5, 4, 3, 2, 1]);
  assert.equal(calls.length, 3, calls.join("\n"));

  const page = await memory.historyPage("status", { namespace: "team", limit: 3 });
  assert.deepEqual(
    page.data.map((m) => m.version),
    [5, 4, 3],
  );
  assert.equal(typeof page.next_cursor, "string");
  const rest = await memory.historyPage("status", { namespace: "team", limit: 3, cursor: page.next_cursor ?? undefined });
  assert.deepEqual(
    rest.data.map((m) => m.version),
    [2, 1],
  );
  assert.equal(rest.next_cursor, null);

  // Leaving early fetches no further page.
  calls.length = 0;
  for await (const m of memory.history("status", { namespace: "team", limit: 1 })) {
    assert.equal(m.version, 5);
    break;
  }
  assert.equal(calls.length, 1);
});

test("dedupe removes the less useful of two copies; a dry run only reports", async () => {
  const memory = server.client(server.createKey("dedupe")).memory;
  const kept = await memory.put({ key: "launch", value: "the launch is on Friday", importance: 9 });
  const copy = await memory.put({ key: "launch_copy", value: "the launch is on Friday", importance: 2 });
  await memory.put({ key: "other", value: "the office plant needs water on Mondays" });
  const dry = await memory.dedupe({ dry_run: true });
  assert.equal(dry.dry_run, true);
  assert.equal(dry.removed, 1);
  assert.equal((await memory.namespaces()).namespaces[0]?.count, 3);
  const done = await memory.dedupe();
  assert.equal(done.removed, 1);
  assert.deepEqual(
    done.pairs.map((p) => [p.kept, p.removed]),
    [[kept.memory_id, copy.memory_id]],
  );
  await assert.rejects(memory.get("launch_copy"), { code: "not_found" });
});

test("consolidate reports clusters on a dry run", async () => {
  const memory = server.client(server.createKey("consolidate")).memory;
  await memory.put({ key: "coffee", value: "the user drinks black coffee every morning" });
  await memory.put({ key: "coffee_time", value: "the user drinks coffee every morning at seven" });
  const dry = await memory.consolidate({ dry_run: true, min_cluster_size: 2, threshold: 0.5 });
  assert.equal(dry.dry_run, true);
  assert.equal(dry.clusters, 1);
  assert.equal(dry.consolidated[0]?.replaced.length, 2);
});

test("an export imports as it is into another account", async () => {
  const source = server.client(server.createKey("export_from")).memory;
  await source.put({ key: "a", value: "alpha", tags: ["x"], importance: 3 });
  await source.put({ key: "b", value: "beta", namespace: "other" });
  await source.put({ key: "c", value: "gamma", expires_in_days: 2 });
  const exported = await source.export();
  assert.equal(exported.format, "wasmind.memory.export");
  assert.equal(exported.count, 3);

  const target = server.client(server.createKey("export_to")).memory;
  const result = await target.import(exported);
  assert.deepEqual([result.imported, result.failed, result.errors], [3, 0, []]);
  const reexported = await target.export();
  const shape = (d: typeof exported) => d.memories.map((m) => [m.key, m.value, m.namespace, m.tags, m.importance]);
  assert.deepEqual(shape(reexported), shape(exported));

  const partial = await target.import({ memories: [{ key: "ok_item", value: "fine" }, { key: "Bad Key", value: "x" }] });
  assert.equal(partial.imported, 1);
  assert.equal(partial.failed, 1);
  assert.equal(partial.errors[0]?.code, "invalid_key");
});

/** Every item of an async iterator, in order (Array.fromAsync is Node 22's). */
async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) {
    all.push(item);
  }
  return all;
}

test("as of an instant, the values then; observed_at kept; provenance recorded", async () => {
  const memory = server.client(server.createKey("time")).memory;
  const stated = 1_700_000_000_000;
  const first = await memory.put({ key: "city", value: "lives in Lisbon", observed_at: stated });
  assert.equal(first.observed_at, stated);
  assert.equal(first.provenance?.door, "rest");
  assert.ok(first.provenance?.key_id?.startsWith("key_"));
  await new Promise((resolve) => setTimeout(resolve, 10));
  const between = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 10));
  await memory.put({ key: "city", value: "lives in Porto" });
  assert.equal((await memory.get("city", { asOf: between })).value, "lives in Lisbon");
  const then = [];
  for await (const m of memory.list({ asOf: between })) then.push(m.value);
  assert.deepEqual(then, ["lives in Lisbon"]);
  const found = await memory.search({ query: "Lisbon Porto", mode: "keyword", as_of: between });
  assert.deepEqual(
    found.results.map((r) => r.value),
    ["lives in Lisbon"],
  );
  const old = [];
  for await (const m of memory.list({ observedBefore: stated + 1 })) old.push(m.value);
  assert.deepEqual(old, [], "Porto is observed now");
  const error = await memory.search({ query: "x", as_of: Date.now() + 86_400_000 }).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof WasmindError);
  assert.equal(error.code, "invalid_as_of");
});
