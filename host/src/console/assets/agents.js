// Agents: the account's agents newest first, their statuses refreshed while the section
// is shown, and one agent's progress and log events streamed (SSE) into its detail view as
// they happen.

import { api, eventsUrl } from './api.js';
import { attempt, el, when } from './dom.js';

const $ = (id) => document.getElementById(id);
/** How often the list is re-read while shown (the public API has no list stream). */
const REFRESH_MS = 2000;

let timer = null;
let stream = null;
let openId = null;

function row(agent) {
  return el('tr', { 'data-agent-id': agent.agent_id, onclick: () => open(agent.agent_id) },
    el('td', {}, el('button', { type: 'button', class: 'link' })),
    el('td', {}),
    el('td', {}, when(agent.created_at)),
    el('td', {}, agent.model));
}

/** Writes what changes over an agent's life into its row. */
function update(tr, agent) {
  tr.cells[0].firstChild.textContent = agent.name;
  tr.cells[1].textContent = agent.status;
  tr.cells[1].className = `status ${agent.status}`;
  tr.classList.toggle('selected', agent.agent_id === openId);
  return tr;
}

/** Updates rows in place (a focused row keeps its focus); adds and reorders only when needed. */
async function load() {
  const { data } = await api('GET', 'agents?limit=50');
  const body = $('agents-table').tBodies[0];
  const rows = new Map([...body.rows].map((tr) => [tr.dataset.agentId, tr]));
  const wanted = data.map((a) => update(rows.get(a.agent_id) ?? row(a), a));
  if (wanted.some((tr, i) => body.rows[i] !== tr) || body.rows.length !== wanted.length) {
    body.replaceChildren(...wanted);
  }
}

function renderRecord(agent) {
  $('agent-name').textContent = agent.name;
  $('agent-status').textContent = agent.status;
  $('agent-status').className = `status ${agent.status}`;
  $('agent-task').textContent = agent.task;
  $('agent-result').textContent = agent.error
    ? `${agent.error.code}: ${agent.error.message}`
    : (agent.final_result ?? '');
}

function entry(time, kind, message) {
  return el('li', {}, el('time', {}, when(time)), ' ', el('span', { class: 'kind' }, kind), ' ',
    message);
}

function closeStream() {
  stream?.close();
  stream = null;
}

/** Opens one agent's detail and follows it until it ends. */
function open(agentId) {
  closeStream();
  openId = agentId;
  for (const tr of $('agents-table').querySelectorAll('tr[data-agent-id]')) {
    tr.classList.toggle('selected', tr.dataset.agentId === agentId);
  }
  $('agent-detail').hidden = false;
  $('agent-stream').textContent = 'connecting…';
  const source = new EventSource(eventsUrl(agentId));
  stream = source;
  // Every (re)connection replays the agent's entries from the start: begin afresh.
  source.addEventListener('open', () => {
    $('agent-progress').replaceChildren();
    $('agent-logs').replaceChildren();
    $('agent-stream').textContent = 'live';
  });
  source.addEventListener('status', (e) => renderRecord(JSON.parse(e.data)));
  source.addEventListener('progress', (e) => {
    const p = JSON.parse(e.data);
    $('agent-progress').append(entry(p.ts, p.kind, p.message));
  });
  source.addEventListener('log', (e) => {
    const l = JSON.parse(e.data);
    $('agent-logs').append(entry(l.ts, l.kind, l.message));
  });
  source.addEventListener('end', () => {
    source.close();
    $('agent-stream').textContent = 'ended';
  });
  source.addEventListener('error', () => {
    if (source.readyState !== EventSource.CLOSED) return; // the browser reconnects by itself
    $('agent-stream').textContent = 'stream closed';
    // The stream does not say why; the record does (and a 401 signs out).
    attempt(async () => renderRecord(await api('GET', `agents/${encodeURIComponent(agentId)}`)));
  });
}

/** Opens `agentId`'s detail when the section is shown next (a link from elsewhere). */
export function select(agentId) {
  openId = agentId;
}

export function show() {
  timer = setInterval(() => attempt(load), REFRESH_MS);
  if (openId) open(openId);
  return attempt(load);
}

export function hide() {
  clearInterval(timer);
  timer = null;
  closeStream();
}
