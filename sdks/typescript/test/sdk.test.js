// The SDK against its own doubles: the memory tools, the tool loop, the doubles' checks,
// and the replay check — which passes an agent that gets all its outside data through host
// calls and fails one that reads the clock around them.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  AgentFailed,
  Completion,
  MemoryServiceError,
  MindError,
  ToolError,
  ToolLoop,
  callMemoryTool,
  memoryTools,
  toolCall,
} from '../src/index.js';
import {
  FakeTools,
  FakeWeb,
  InMemoryMemory,
  ReplayDiverged,
  ScriptedMind,
  TestContext,
  checkReplay,
} from '../src/testing.js';

const call = (name, args) => toolCall('c', name, args);

test('the memory tools round-trip and fail as text', () => {
  const t = new TestContext();
  const memory = t.ctx.memory;
  const put = JSON.parse(callMemoryTool(memory, call('service_memory_put', { key: 'city', value: 'Porto', tags: ['trip'] })));
  assert.deepEqual(put, { memory_id: 'mem_1', key: 'city', namespace: 'default' });
  const got = JSON.parse(callMemoryTool(memory, call('service_memory_get', { key: 'city' })));
  assert.equal(got.found, true);
  assert.equal(got.value, 'Porto');
  assert.equal(got.access_count, 1);
  const found = JSON.parse(callMemoryTool(memory, call('service_memory_search', { query: 'porto' })));
  assert.equal(found.results[0].key, 'city');
  const listed = JSON.parse(callMemoryTool(memory, call('service_memory_list', { tags: ['trip'] })));
  assert.equal(listed.count, 1);
  assert.deepEqual(JSON.parse(callMemoryTool(memory, call('service_memory_delete', { key: 'city' }))), { deleted: true });
  assert.deepEqual(JSON.parse(callMemoryTool(memory, call('service_memory_get', { key: 'city' }))), { found: false });

  assert.match(callMemoryTool(memory, call('service_memory_put', { key: 'Bad Key', value: 'x' })), /^Service Memory failed: key "Bad Key" must be snake_case/);
  assert.equal(callMemoryTool(memory, call('service_memory_put', { value: 'x' })), 'Service Memory failed: invalid arguments: `key` is required');
  assert.match(callMemoryTool(memory, toolCall('c', 'service_memory_get', 'no')), /invalid arguments: expected a JSON object/);
  assert.match(callMemoryTool(memory, { id: 'c', name: 'service_memory_get', argumentsJson: '{' }), /invalid arguments/);
  assert.equal(callMemoryTool(memory, call('service_memory_delete', { key: 'gone' })), 'Service Memory failed: no live memory at key "gone"');
  assert.match(callMemoryTool(memory, call('weather', {})), /^Unknown tool "weather"/);
});

test("the memory tools' specs name the five tools with the spec's bounds", () => {
  const specs = memoryTools();
  assert.deepEqual(specs.map((s) => s.name), ['service_memory_put', 'service_memory_get', 'service_memory_search', 'service_memory_list', 'service_memory_delete']);
  const put = specs[0].parameters;
  assert.deepEqual(put.required, ['key', 'value']);
  assert.equal(put.properties.value.maxLength, 5000);
  assert.equal(specs[2].parameters.properties.limit.maximum, 50);
  assert.equal(specs[3].parameters.properties.limit.maximum, 200);
  assert.equal(specs[3].parameters.required, undefined);
});

test('without memory a tool call says so, and the quota is kept', () => {
  const none = new TestContext({ withoutMemory: true });
  assert.equal(callMemoryTool(none.ctx.memory, call('service_memory_get', { key: 'x' })), 'Service Memory failed: memory channel is not configured.');
  const t = new TestContext({ memory: new InMemoryMemory({ quota: 1 }) });
  t.ctx.memory.put({ key: 'a', value: '1' });
  assert.equal(callMemoryTool(t.ctx.memory, call('service_memory_put', { key: 'b', value: '2' })), 'Service Memory failed: memory quota exceeded: 1 live memories');
  t.ctx.memory.put({ key: 'a', value: 'updated' });
  assert.equal(t.memory.versionCount('default', 'a'), 2);
});

test("the tool loop runs memory, own and account tools until an answer", () => {
  const tools = new FakeTools().tool(
    { name: 'weather', description: 'The weather', parameters: { type: 'object' } },
    (args) => `sunny in ${args.city}`,
  );
  const mind = new ScriptedMind([
    Completion.calls(call('service_memory_put', { key: 'city', value: 'Porto' }), toolCall('c2', 'shout', { text: 'hi' })),
    Completion.calls(toolCall('c3', 'weather', { city: 'Porto' }), toolCall('c4', 'nope', {})),
    { text: 'Sunny in Porto.', toolCalls: [], usage: { inputTokens: 3, outputTokens: 4 } },
  ]);
  const t = new TestContext({ mind, tools });
  const loop = new ToolLoop('be brief')
    .accountTools()
    .tool({ name: 'shout', description: 'Shouts', parameters: { type: 'object' } }, (a) => a.text.toUpperCase());
  assert.equal(loop.run(t.ctx, 'Weather?'), 'Sunny in Porto.');
  const offered = mind.requests[0].tools.map((s) => s.name);
  assert.deepEqual(offered.slice(-2), ['shout', 'weather']);
  const answers = mind.requests[2].messages.filter((m) => m.role === 'tool').map((m) => m.content);
  assert.equal(JSON.parse(answers[0]).key, 'city');
  assert.equal(answers[1], 'HI');
  assert.equal(answers[2], 'sunny in Porto');
  assert.match(answers[3], /^Unknown tool "nope"/);
  assert.deepEqual(t.progress.reportsOf('tool_use'), ['service_memory_put', 'shout', 'weather', 'nope']);
  assert.equal(JSON.parse(t.progress.logs.find((l) => l.kind === 'thinking').dataJson).usage.output_tokens, 4);
  assert.equal(t.memory.peek('default', 'city').value, 'Porto');
});

test("the tool loop fails on the Mind's error, a stop and the step cap", () => {
  const failing = new TestContext({ mind: new ScriptedMind([new MindError('unavailable', 'down')]) });
  assert.throws(() => new ToolLoop('p').run(failing.ctx, 't'), new AgentFailed('unavailable: down'));
  const stopped = new TestContext({ mind: new ScriptedMind().thenStop() });
  assert.throws(() => new ToolLoop('p').run(stopped.ctx, 't'), new AgentFailed('stopped'));
  const looping = new TestContext({
    mind: new ScriptedMind([Completion.calls(call('service_memory_list', {})), Completion.calls(call('service_memory_list', {}))]),
  });
  assert.throws(() => new ToolLoop('p').maxSteps(2).run(looping.ctx, 't'), /gave up after 2 steps/);
});

test('registered tools fail with a tool error', () => {
  const t = new TestContext();
  assert.throws(() => t.ctx.tools.call('weather', {}), (e) => e instanceof ToolError && e.kind === 'unknown');
  t.tools.tool({ name: 'weather', description: '', parameters: {} }, () => 'ok');
  assert.throws(() => t.ctx.tools.callJson('weather', '{'), (e) => e instanceof ToolError && e.kind === 'invalid_arguments');
  assert.equal(t.ctx.tools.call('weather', {}), 'ok');
  t.requestStop();
  assert.throws(() => t.ctx.tools.call('weather', {}), new ToolError('stopped'));
  assert.throws(() => t.ctx.memory.get('x'), new MemoryServiceError('stopped'));
});

/** An agent whose calls depend only on its host calls' results. */
function remembers(ctx, task) {
  const seen = ctx.memory.get('seen');
  ctx.memory.put({ key: 'seen', value: seen ? `${seen.value}+` : task });
  return ctx.mind.complete([{ role: 'user', content: task, toolCalls: [] }]).text;
}

test('the replay check passes an agent that replays', () => {
  const t = new TestContext({ mind: new ScriptedMind([Completion.answer('done')]) });
  const calls = checkReplay(t, 'go', remembers);
  assert.equal(calls.length, 3);
  assert.match(calls[0], /^memoryGet\('seen'/);
  assert.equal(t.memory.versionCount('default', 'seen'), 1, 'the doubles see the first run only');
});

test('the replay check fails an agent that reads outside data around host calls', () => {
  const clocked = (ctx, task) => {
    ctx.memory.put({ key: 'at', value: `${task} at ${process.hrtime.bigint()}` });
    return 'done';
  };
  assert.throws(() => checkReplay(new TestContext(), 'go', clocked), (e) => e instanceof ReplayDiverged && e.step === 1 && /memoryPut/.test(e.made));
});

test('the replay check fails an agent that calls less on replay', () => {
  let runs = 0;
  const forgetful = (ctx) => {
    runs += 1;
    if (runs === 1) ctx.progress.report('info', 'first');
    return 'done';
  };
  assert.throws(() => checkReplay(new TestContext(), 'go', forgetful), (e) => e instanceof ReplayDiverged && /no further call/.test(e.made));
});

/** Fetches the status page its task names and remembers whether it is up. */
async function watcher(ctx, task) {
  let state;
  try {
    const page = await ctx.fetch(task);
    state = page.status === 200 ? `up: ${await page.text()}` : `status ${page.status}`;
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
    state = 'unreachable';
  }
  ctx.memory.put({ key: 'status', value: state });
  return state;
}

test('ctx.fetch answers from the FakeWeb, and an async agent replays', async () => {
  const web = new FakeWeb().page('https://status.example/', 'all good', { headers: { 'content-type': 'text/plain' } });
  const t = new TestContext({ web });
  const calls = await checkReplay(t, 'https://status.example/', watcher);
  assert.deepEqual(calls.map((c) => c.split('(')[0]), ['fetch', 'memoryPut']);
  assert.equal(t.memory.get('status').value, 'up: all good');
  assert.deepEqual(web.requests, [{ url: 'https://status.example/', method: 'GET', body: undefined }], 'the doubles see the first run only');
  const refused = new TestContext();
  assert.equal(await watcher(refused.ctx, 'https://elsewhere.example/'), 'unreachable');
});

test('the replay check fails an async agent whose request depends on outside data', async () => {
  let runs = 0;
  const drifting = async (ctx) => {
    runs += 1;
    await ctx.fetch(`https://status.example/?n=${runs}`).catch(() => undefined);
    return 'done';
  };
  await assert.rejects(checkReplay(new TestContext(), 'go', drifting), (e) => e instanceof ReplayDiverged && e.step === 1 && /n=2/.test(e.made));
});
