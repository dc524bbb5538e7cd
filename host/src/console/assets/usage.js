// Usage against the plan: agent-hours this month, live memories, concurrent agents, each
// key's spawn windows, and the Mind's tokens.

import { api } from './api.js';
import { attempt, el, num } from './dom.js';

const $ = (id) => document.getElementById(id);

/** `used of limit unit` and a meter, or `used unit (no limit)`. */
function against(id, { used, limit }, unit, digits = 0) {
  const text = limit === null
    ? `${num(used, digits)} ${unit} (no limit)`
    : `${num(used, digits)} of ${num(limit, digits)} ${unit}`;
  const parts = [el('span', {}, text)];
  if (limit !== null) {
    parts.push(el('meter', { min: 0, max: limit, value: Math.min(used, limit), high: limit * 0.8,
      optimum: 0, 'aria-label': `${unit} used` }));
  }
  $(id).replaceChildren(...parts);
}

const windowName = (secs) => ({ 60: 'per minute', 3600: 'per hour' })[secs] ?? `per ${secs} s`;

async function load() {
  const u = await api('GET', 'usage');
  $('usage-period').textContent = `${u.month}, plan ${u.plan}`;
  // Four decimals, as `wasmind usage` prints them: a first run is a few ten-thousandths.
  against('usage-agent-hours', u.agent_hours, 'agent-hours', 4);
  against('usage-memories', { used: u.memories.live, limit: u.memories.limit }, 'memories');
  against('usage-concurrency',
    { used: u.concurrent_agents.running, limit: u.concurrent_agents.limit }, 'running');
  $('usage-cpu').textContent = `${num(u.cpu_seconds, 3)} CPU seconds`;
  $('usage-tokens').textContent = `${num(u.input_tokens, 0)} in, ${num(u.output_tokens, 0)} out`;
  $('usage-windows').tBodies[0].replaceChildren(...u.spawn_windows.map((w) => el('tr', {},
    el('td', {}, el('code', {}, w.key_id)),
    el('td', {}, windowName(w.window_secs)),
    el('td', {}, w.limit === null ? `${w.used}` : `${w.used} of ${w.limit}`))));
}

export function show() {
  return attempt(load);
}
