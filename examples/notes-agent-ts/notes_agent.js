// An agent that keeps notes (the JavaScript twin of `examples/notes-agent`): it asks the
// Mind for a short plan, recalls what memory already holds on the task, works through the
// SDK's tool loop with both in its prompt, and files the result as a note under a key
// derived from the task (so the same task run again updates its note, as a new version).

import {
  AgentFailed,
  LogKind,
  MemoryServiceError,
  Message,
  MindError,
  ToolLoop,
  limits,
} from '@wasmind/agent-sdk';

/** Where notes are filed. */
export const NOTES_NAMESPACE = 'notes';

const PLAN_PROMPT =
  'Write a short plan (at most five numbered steps) for the task the user gives. ' +
  'Plan only; do not do the task.';
const WORK_PROMPT =
  'You are a diligent assistant with a long-term memory (the service_memory_* tools). ' +
  'Follow your plan, use memory where it helps, and answer with the result alone, ' +
  'without tool calls, when done.';
/** Memories recalled into the prompt, at most. */
const RECALL = 5;

/** Plans, recalls, works, files the note.
 * @param {import('@wasmind/agent-sdk').Context} ctx @param {string} task */
export function run(ctx, task) {
  const plan = makePlan(ctx, task);
  const recalled = recall(ctx, task);
  let prompt = `${WORK_PROMPT}\n\nYour plan:\n${plan}`;
  if (recalled.length) {
    prompt += '\n\nWhat your memory already holds on this task:';
    for (const hit of recalled) prompt += `\n- ${hit.key} (${hit.namespace}): ${hit.value}`;
  }
  const answer = new ToolLoop(prompt).maxSteps(15).run(ctx, task);
  fileNote(ctx, task, answer);
  return answer;
}

/** Asks the Mind for a plan (no tools) and logs it as thinking. */
function makePlan(ctx, task) {
  if (ctx.stopRequested()) throw new AgentFailed('stopped');
  ctx.progress.report('info', 'planning');
  let completion;
  try {
    completion = ctx.mind.complete([Message.system(PLAN_PROMPT), Message.user(task)]);
  } catch (e) {
    if (!(e instanceof MindError)) throw e;
    if (e.kind === 'stopped' || ctx.stopRequested()) throw new AgentFailed('stopped');
    throw new AgentFailed(e.message);
  }
  const plan = completion.text ?? '';
  ctx.progress.log(LogKind.THINKING, plan);
  return plan;
}

/** Searches memory for the task; an unavailable memory just means nothing is recalled. */
function recall(ctx, task) {
  let hits;
  try {
    hits = ctx.memory.search({ query: task, limit: RECALL });
  } catch (e) {
    if (!(e instanceof MemoryServiceError)) throw e;
    ctx.progress.log(LogKind.THINKING, `Recalling nothing: ${e.message}`);
    return [];
  }
  ctx.progress.report('info', `recalled ${hits.length} memories`);
  return hits;
}

/** Writes the note; a failure is reported, not fatal (the answer stands). */
function fileNote(ctx, task, answer) {
  const value = `Task: ${task}\n\nResult: ${answer}`.slice(0, limits.MAX_VALUE_CHARS);
  let put;
  try {
    put = ctx.memory.put({ key: noteKey(task), value, namespace: NOTES_NAMESPACE, tags: ['note'] });
  } catch (e) {
    if (!(e instanceof MemoryServiceError)) throw e;
    ctx.progress.report('info', `could not file the note: ${e.message}`);
    return;
  }
  ctx.progress.report('info', `filed note ${put.key}`);
}

/** `note_` + the task's first words in snake_case + a hash of the whole task: stable for
 * one task, distinct between tasks that start alike, always a valid key — the same key the
 * Rust notes agent derives. */
export function noteKey(task) {
  const words = (task.match(/[A-Za-z0-9]+/g) ?? []).slice(0, 6).map((w) => w.toLowerCase());
  let key = 'note';
  for (const word of words) {
    if (key.length + word.length + 1 > 80) break;
    key += `_${word}`;
  }
  // FNV-1a: tiny, stable across builds and platforms.
  let h = 0xcbf29ce484222325n;
  for (const b of new TextEncoder().encode(task)) {
    h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return `${key}_${(h & 0xffffffffn).toString(16).padStart(8, '0')}`;
}
