/** Agent components through the client, against the real server: upload, list, get, run, delete. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, test } from "node:test";

import { WasmindError } from "../src/index.js";
import { Server, guest } from "./support/server.js";

const server = await Server.start();
after(() => server.stop());

test("an uploaded component is listed, runs, and is gone once deleted", async () => {
  const client = server.client(server.createKey("components"));
  const bytes = guest("notes_agent");
  const v1 = await client.components.upload(bytes, { name: "notes_agent", version: "1.2.0" });
  assert.match(v1.component_id, /^cmp_/);
  assert.deepEqual([v1.name, v1.version, v1.size], ["notes_agent", "1.2.0", bytes.length]);
  assert.equal(v1.sha256, createHash("sha256").update(bytes).digest("hex"));
  // A Blob is a body as good as bytes (what a browser's file input gives).
  const v2 = await client.components.upload(new Blob([new Uint8Array(bytes)]), { name: "notes_agent", version: "1.10.0" });
  assert.equal(v2.sha256, v1.sha256);

  assert.deepEqual(await client.components.get(v1.component_id), v1);
  const listed = [];
  for await (const component of client.components.list({ limit: 1 })) {
    listed.push(component.component_id);
  }
  assert.deepEqual(listed, [v2.component_id, v1.component_id]);

  const spawned = await client.agents.spawn({ task: "Write down that the demo is on Tuesday", agent: "notes_agent" });
  assert.deepEqual(spawned.agent, { component_id: v2.component_id, name: "notes_agent", version: "1.10.0" });
  let end;
  for await (const event of client.agents.follow(spawned.agent_id, { intervalMs: 50 })) {
    if (event.type === "end") {
      end = event.agent;
    }
  }
  assert.equal(end?.status, "completed", JSON.stringify(end?.error));

  assert.deepEqual(await client.components.delete(v2.component_id), v2);
  await assert.rejects(client.components.get(v2.component_id), { code: "component_not_found", status: 404 });
  await assert.rejects(client.agents.spawn({ task: "x", agent: "notes_agent@1.10.0" }), { code: "component_not_found" });
  assert.equal((await client.components.listPage()).data.length, 1);
});

test("the server's refusals of an upload arrive as its errors", async () => {
  const client = server.client(server.createKey("refusals"));
  const invalid = await client.components.upload(new TextEncoder().encode("not wasm"), { name: "junk", version: "1.0.0" }).then(
    () => assert.fail("junk was accepted"),
    (e: unknown) => e,
  );
  assert.ok(invalid instanceof WasmindError);
  assert.equal(invalid.status, 400);
  assert.equal(invalid.code, "invalid_component");
  assert.match(invalid.message, /\S/);

  await assert.rejects(client.components.upload(guest("notes_agent"), { name: "notes", version: "01.0.0" }), {
    code: "invalid_version",
    details: { parameter: "version" },
  });
  await client.components.upload(guest("notes_agent"), { name: "notes", version: "1.0.0" });
  await assert.rejects(client.components.upload(guest("notes_agent"), { name: "notes", version: "1.0.0" }), {
    code: "component_exists",
    status: 409,
  });
});
