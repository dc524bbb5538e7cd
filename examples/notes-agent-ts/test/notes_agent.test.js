// The notes agent against the SDK's doubles, as `examples/notes-agent`'s own tests.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { AgentFailed, Completion, LogKind, limits, toolCall } from '@wasmind/agent-sdk';
import { ScriptedMind, TestContext, checkReplay } from '@wasmind/agent-sdk/testing';

import { NOTES_NAMESPACE, noteKey, run } from '../notes_agent.js';

const TASK = 'Suggest a weekend trip from Lisbon';

test('replays: a server resuming it after a restart runs it again on the recorded results', () => {
  const t = new TestContext({
    mind: new ScriptedMind([
      Completion.answer('1. Recall preferences\n2. Pick a town'),
      Completion.calls(toolCall('c1', 'service_memory_put', { key: 'trip_style', value: 'by train' })),
      Completion.answer('Go to Sintra by train.'),
    ]),
  });
  const calls = checkReplay(t, TASK, run);
  assert.ok(calls.some((c) => c.startsWith('memorySearch(')));
  assert.equal(calls.filter((c) => c.startsWith('memoryPut(')).length, 2);
});

test('plans, recalls, works and files a note', () => {
  const t = new TestContext({
    mind: new ScriptedMind([
      Completion.answer('1. Recall preferences\n2. Pick a town'),
      Completion.calls(toolCall('c1', 'service_memory_get', { key: 'budget' })),
      Completion.answer('Go to Sintra by train.'),
    ]),
  });
  t.ctx.memory.put({ key: 'trip_style', value: 'likes trips from Lisbon by train' });

  assert.equal(run(t.ctx, TASK), 'Go to Sintra by train.');

  const requests = t.mind.requests;
  assert.deepEqual(requests[0].tools, [], 'planning offers no tools');
  const prompt = requests[1].messages[0].content;
  assert.ok(prompt.includes('1. Recall preferences'), prompt);
  assert.ok(prompt.includes('trip_style (default): likes trips from Lisbon by train'), prompt);
  assert.equal(t.progress.logsOf(LogKind.THINKING)[0], '1. Recall preferences\n2. Pick a town');
  const note = t.memory.peek(NOTES_NAMESPACE, noteKey(TASK));
  assert.ok(note.value.endsWith('Result: Go to Sintra by train.'), note.value);
  assert.deepEqual(note.tags, ['note']);
});

test('the same task updates its note', () => {
  const t = new TestContext({
    mind: new ScriptedMind(['plan', 'first answer', 'plan', 'second answer'].map(Completion.answer)),
  });
  run(t.ctx, TASK);
  run(t.ctx, TASK);
  assert.equal(t.memory.versionCount(NOTES_NAMESPACE, noteKey(TASK)), 2);
  assert.ok(t.memory.peek(NOTES_NAMESPACE, noteKey(TASK)).value.endsWith('second answer'));
  // The second run recalled the first run's note into its prompt.
  assert.ok(t.mind.requests[3].messages[0].content.includes('first answer'));
});

test('works without memory', () => {
  const t = new TestContext({
    mind: new ScriptedMind([Completion.answer('plan'), Completion.answer('done')]),
    withoutMemory: true,
  });
  assert.equal(run(t.ctx, TASK), 'done');
  assert.ok(t.progress.reportsOf('info').some((m) => m.startsWith('could not file the note')));
});

test('a stop while planning ends the run', () => {
  const t = new TestContext({ mind: new ScriptedMind().thenStop() });
  assert.throws(() => run(t.ctx, TASK), new AgentFailed('stopped'));
  assert.equal(t.memory.size, 0);
});

test('note keys are valid and stable, the Python and Rust agents\' own', () => {
  const key = noteKey(TASK);
  assert.ok(key.startsWith('note_suggest_a_weekend_trip_from_lisbon_'), key);
  assert.equal(key, noteKey(TASK));
  assert.notEqual(key, noteKey('Suggest a weekend trip from Lisbon, cheaply'));
  assert.ok(noteKey('¿¡').startsWith('note_'));
  const long = noteKey('supercalifragilistic '.repeat(20));
  assert.ok(long.length <= limits.MAX_KEY_CHARS);
  for (const k of [key, long]) assert.match(k, new RegExp(limits.KEY_PATTERN));
});
