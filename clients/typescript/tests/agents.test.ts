/** The agents API through the client, against the real server: spawn, read, list, logs, stop, follow. */
import assert from "node:assert/strict";
import { after, test } from "node:test";

import { type AgentProgress, type FollowEvent, type Wasmind, WasmindError } from "../src/index.js";
import { recorder } from "./support/recorder.js";
import { Server, guest } from "./support/server.js";

// A stopped agent's store is dropped after the grace; a short one keeps the run brief.
const server = await Server.start({ config: "[runtime]\nstop_grace_secs = 1\n" });
after(() => server.stop());

/** Resolves once `condition` holds (checked every 20 ms), failing after 30 s. */
async function until(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await condition())) {
    assert.ok(Date.now() < deadline, "timed out waiting");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every event `follow` yields for `id`, polling every `intervalMs`. */
async function followAll(client: Wasmind, id: string, intervalMs = 20): Promise<FollowEvent[]> {
  const events: FollowEvent[] = [];
  for await (const event of client.agents.follow(id, { intervalMs })) {
    events.push(event);
  }
  return events;
}

/** The progress entries among `events`, and the final record `end` carried. */
function split(events: FollowEvent[]) {
  const entries: AgentProgress[] = [];
  const ends = [];
  for (const event of events) {
    if (event.type === "progress") {
      entries.push(event.entry);
    } else {
      ends.push(event.agent);
    }
  }
  assert.equal(ends.length, 1, "one end");
  assert.equal(events.at(-1)?.type, "end", "the end comes last");
  return { entries, agent: ends[0]! };
}

test("follow yields each progress entry once, then the end with the final record", async () => {
  const client = server.client(server.createKey("follow"));
  const spawned = await client.agents.spawn({ task: "Remember that the launch is on Friday" });
  assert.match(spawned.agent_id, /^ag_/);
  assert.equal(spawned.status, "spawning");
  assert.deepEqual(spawned.container, { region: "iad", status: "starting" });

  const { entries, agent } = split(await followAll(client, spawned.agent_id));
  assert.equal(agent.status, "completed");
  assert.equal(typeof agent.final_result, "string");
  assert.ok(entries.length > 0);
  assert.deepEqual(entries, agent.progress);

  // Followed after the end: everything at once, then the end.
  const again = split(await followAll(client, spawned.agent_id));
  assert.deepEqual(again.entries, agent.progress);
  assert.equal(again.agent.status, "completed");
});

test("a stopped agent ends the follow; polls in between pass nothing on twice", async () => {
  const { fetch, calls } = recorder();
  const key = server.createKey("stop");
  const client = server.client(key, { fetch });
  const observer = server.client(key);
  await client.components.upload(guest("guest_linger"), { name: "linger", version: "1.0.0" });
  const spawned = await client.agents.spawn({ task: "wait", agent: "linger" });
  const polls = () => calls.filter((c) => c.startsWith(`GET /api/v1/agents/${spawned.agent_id} `)).length;
  const following = followAll(client, spawned.agent_id);
  await until(async () => (await observer.agents.get(spawned.agent_id)).progress.some((e) => e.message === "lingering"));
  // Several polls see the same progress before the stop.
  const seen = polls();
  await until(async () => polls() >= seen + 3);
  const stopped = await observer.agents.stop(spawned.agent_id);
  assert.deepEqual(stopped, { agent_id: spawned.agent_id, status: "stopped" });

  const { entries, agent } = split(await following);
  assert.equal(agent.status, "stopped");
  assert.equal(agent.final_result, null);
  assert.equal(entries.filter((e) => e.message === "lingering").length, 1);
  assert.deepEqual(entries, agent.progress);
  // Stopping a finished agent changes nothing.
  assert.equal((await client.agents.stop(spawned.agent_id)).status, "stopped");
});

test("following stops when its signal aborts", async () => {
  const client = server.client(server.createKey("abort"));
  await client.components.upload(guest("guest_linger"), { name: "linger", version: "1.0.0" });
  const spawned = await client.agents.spawn({ task: "wait", agent: "linger" });
  const abort = new AbortController();
  const seen: FollowEvent[] = [];
  await assert.rejects(
    (async () => {
      for await (const event of client.agents.follow(spawned.agent_id, { intervalMs: 20, signal: abort.signal })) {
        seen.push(event);
        abort.abort(new Error("enough"));
      }
    })(),
    { message: "enough" },
  );
  assert.equal(seen.length, 1);
  await client.agents.stop(spawned.agent_id);
});

test("get, list across pages, and the logs of a run", async () => {
  const client = server.client(server.createKey("lists"));
  const ids: string[] = [];
  for (const task of ["Note that the sky is blue", "Note that grass is green", "Note that snow is white"]) {
    const { agent_id } = await client.agents.spawn({ task, name: task.slice(10) });
    ids.push(agent_id);
    await followAll(client, agent_id);
  }
  const listed: string[] = [];
  for await (const agent of client.agents.list({ limit: 2 })) {
    listed.push(agent.agent_id);
  }
  assert.deepEqual(listed, [...ids].reverse());
  const first = await client.agents.listPage({ limit: 2 });
  assert.equal(first.data.length, 2);
  assert.equal((await client.agents.listPage({ limit: 2, cursor: first.next_cursor ?? undefined })).next_cursor, null);

  const agent = await client.agents.get(ids[0]!);
  assert.equal(agent.task, "Note that the sky is blue");
  assert.equal(agent.status, "completed");

  const logs = [];
  for await (const event of client.agents.logs(ids[0]!)) {
    logs.push(event);
  }
  assert.equal(logs.at(-1)?.kind, "terminal");
  const paged = [];
  for await (const event of client.agents.logs(ids[0]!, { limit: 2 })) {
    paged.push(event);
  }
  assert.deepEqual(paged, logs);
  assert.deepEqual(
    logs.map((e) => e.seq),
    [...logs.map((e) => e.seq)].sort((a, b) => a - b),
  );
});

test("an unknown agent is agent_not_found everywhere, follow included", async () => {
  const client = server.client(server.createKey("unknown"));
  for (const call of [
    () => client.agents.get("ag_unknown"),
    () => client.agents.stop("ag_unknown"),
    () => client.agents.logsPage("ag_unknown"),
    () => client.agents.follow("ag_unknown").next(),
  ]) {
    await assert.rejects(call(), (e: unknown) => e instanceof WasmindError && e.code === "agent_not_found" && e.status === 404);
  }
  await assert.rejects(client.agents.spawn({ task: "" }), { code: "invalid_task", details: { field: "task" } });
});

test("egress lists where the account's agents may reach: nothing unless the operator allowed it", async () => {
  const client = server.client(server.createKey("egress"));
  assert.deepEqual(await client.agents.egress(), { plan: "lightyear", entries: [] });
});
