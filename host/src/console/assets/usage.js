// The plan and its billing (`billing.js`), and usage against the plan: agent-hours this month, live memories, concurrent agents, the
// Mind's tokens, active API keys, open event streams, component uploads in the last hour,
// outgoing HTTP, each key's spawn windows, and the hosts the account's agents may reach.

import { api } from './api.js';
import * as billing from './billing.js';
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
  const u = await api('GET', 'console/usage');
  $('usage-period').textContent = `${u.month}, plan ${u.plan}`;
  await billing.load();
  // Four decimals, as `wasmind usage` prints them: a first run is a few ten-thousandths.
  against('usage-agent-hours', u.agent_hours, 'agent-hours', 4);
  against('usage-memories', { used: u.memories.live, limit: u.memories.limit }, 'memories');
  against('usage-concurrency',
    { used: u.concurrent_agents.running, limit: u.concurrent_agents.limit }, 'running');
  $('usage-cpu').textContent = `${num(u.cpu_seconds, 3)} CPU seconds`;
  against('usage-tokens', u.tokens, 'tokens');
  const perRun = u.tokens.per_run === null ? '' : `; at most ${num(u.tokens.per_run, 0)} per run`;
  $('usage-token-split').textContent =
    `${num(u.input_tokens, 0)} in, ${num(u.output_tokens, 0)} out${perRun}`;
  against('usage-keys', { used: u.keys.active, limit: u.keys.limit }, 'active keys');
  against('usage-streams', { used: u.event_streams.open, limit: u.event_streams.limit }, 'open');
  against('usage-uploads',
    { used: u.component_uploads.last_hour, limit: u.component_uploads.limit }, 'uploads');
  $('usage-windows').tBodies[0].replaceChildren(...u.spawn_windows.map((w) => el('tr', {},
    el('td', {}, el('code', {}, w.key_id)),
    el('td', {}, windowName(w.window_secs)),
    el('td', {}, w.limit === null ? `${w.used}` : `${w.used} of ${w.limit}`))));
  against('usage-http-requests',
    { used: u.http.requests, limit: u.http.requests_limit }, 'requests');
  against('usage-http-bytes', { used: u.http.bytes, limit: u.http.bytes_limit }, 'bytes');
  const egress = await api('GET', 'egress');
  $('usage-egress').tBodies[0].replaceChildren(...egress.entries.map((e) => el('tr', {},
    el('td', {}, el('code', {}, e.host)),
    el('td', {}, e.ports.length === 0 ? 'the scheme\'s own' : e.ports.join(', ')),
    el('td', {}, e.schemes.join(', ')),
    el('td', {}, e.from))));
}

export const { init } = billing;

export function show() {
  return attempt(load);
}
