/**
 * Tools through the client, against the real server and a real HTTP origin it is allowed to
 * reach: register, call, list, get, refresh, delete; the typed errors; a secret never
 * answered; a spawn naming its tools.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";

import { type HttpToolRequest, type McpServerRequest, WasmindError } from "../src/index.js";
import { Origin } from "./support/origin.js";
import { Server } from "./support/server.js";

const SECRET = "sk-weather-0123456789";
const BEARER = "mcp-bearer-9876543210";

const origin = await Origin.start();
const server = await Server.start({ config: origin.egressConfig() });
after(async () => {
  await server.stop();
  await origin.close();
});

function weather(name = "weather"): HttpToolRequest {
  return {
    kind: "http",
    name,
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    endpoint: { url: `${origin.url}/weather`, method: "POST" },
    timeout_secs: 5,
    secret_header: { name: "X-Api-Key", value: SECRET },
  };
}

test("an HTTP tool is registered, called, listed and deleted; its secret is never answered", async () => {
  const client = server.client(server.createKey("tools"));
  const tool = await client.tools.register(weather());
  assert.deepEqual([tool.name, tool.kind, tool.has_secret, tool.secret_header_name], ["weather", "http", true, "X-Api-Key"]);
  assert.deepEqual(tool.endpoint, { url: `${origin.url}/weather`, method: "POST" });

  const before = origin.received.length;
  assert.equal(await client.tools.call("weather", { city: "Oslo" }), "sunny in Oslo");
  const sent = origin.received.slice(before);
  assert.equal(sent.length, 1);
  assert.deepEqual(JSON.parse(sent[0]?.body ?? ""), { city: "Oslo" });
  assert.equal(sent[0]?.headers["x-api-key"], SECRET, "the secret goes to the tool's endpoint only");
  assert.ok(sent[0]?.headers["idempotency-key"]);

  assert.deepEqual(await client.tools.get("weather"), tool);
  assert.deepEqual(await client.tools.list(), [tool]);
  const answers = [tool, await client.tools.get("weather"), await client.tools.list(), await client.tools.delete("weather")];
  for (const answer of answers) {
    assert.ok(!JSON.stringify(answer).includes(SECRET), JSON.stringify(answer));
  }
  assert.deepEqual(await client.tools.list(), []);
  await assert.rejects(client.tools.get("weather"), { status: 404, code: "tool_not_found" });
});

test("the server's refusals arrive as its errors", async () => {
  const client = server.client(server.createKey("refusals"));
  await client.tools.register(weather());
  await assert.rejects(client.tools.register(weather()), { status: 409, code: "tool_exists" });
  const before = origin.received.length;
  await assert.rejects(client.tools.call("weather", { town: "Oslo" }), { status: 400, code: "invalid_arguments" });
  const unknown = await client.tools.call("nothing_here").then(
    () => assert.fail("an unknown tool was called"),
    (e: unknown) => e,
  );
  assert.ok(unknown instanceof WasmindError);
  assert.deepEqual([unknown.status, unknown.code], [404, "tool_not_found"]);
  assert.equal(origin.received.length, before, "a refused call sent nothing");

  // A port the operator did not allow: refused at the call, naming the rule.
  await client.tools.register({ ...weather("elsewhere"), endpoint: { url: "http://127.0.0.2:9/weather" } });
  await assert.rejects(client.tools.call("elsewhere", { city: "Oslo" }), {
    status: 403,
    code: "tool_denied",
    details: { rule: "allowlist" },
  });
  await assert.rejects(client.tools.register(weather("Weather")), { code: "invalid_name", details: { field: "name" } });
  await assert.rejects(client.tools.refresh("weather"), { status: 409, code: "not_an_mcp_server" });
});

test("an MCP server is registered and refreshed; its bearer is never answered", async () => {
  const client = server.client(server.createKey("mcp"));
  const calc: McpServerRequest = { kind: "mcp", name: "calc", url: `${origin.url}/mcp`, bearer: BEARER };
  const registered = await client.tools.register(calc);
  assert.deepEqual([registered.kind, registered.url, registered.has_secret], ["mcp", `${origin.url}/mcp`, true]);
  assert.equal(registered.tools ?? null, null, "listed on first use");
  // The origin is no MCP server: the listing fails, and the record says why.
  await assert.rejects(client.tools.refresh("calc"), { code: "tool_failed" });
  const listed = await client.tools.get("calc");
  assert.ok(listed.list_error);
  const reached = origin.received.filter((r) => r.path === "/mcp");
  assert.equal(reached.at(-1)?.headers.authorization, `Bearer ${BEARER}`);
  for (const answer of [registered, listed, await client.tools.list(), await client.tools.delete("calc")]) {
    assert.ok(!JSON.stringify(answer).includes(BEARER), JSON.stringify(answer));
  }
});

test("a spawn names the tools its agent is offered", async () => {
  const client = server.client(server.createKey("spawn"));
  await client.tools.register(weather());
  const spawned = await client.agents.spawn({ task: "Say hello", tools: ["weather"] });
  let end;
  for await (const event of client.agents.follow(spawned.agent_id, { intervalMs: 50 })) {
    if (event.type === "end") {
      end = event.agent;
    }
  }
  assert.equal(end?.status, "completed", JSON.stringify(end?.error));
  assert.deepEqual(end?.tools, ["weather"]);
  const plain = await client.agents.spawn({ task: "Say hello again" });
  assert.equal((await client.agents.get(plain.agent_id)).tools ?? null, null, "only when the spawn named them");
  await assert.rejects(client.agents.spawn({ task: "Say hello", tools: ["not a name"] }), {
    status: 400,
    code: "invalid_tools",
  });
});
