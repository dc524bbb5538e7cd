// The memory browser: namespaces with their counts, a namespace's newest memories, search
// with each result's score breakdown, a memory's history with who wrote each version (an
// agent's version links to the agent), and (soft) delete.

import { api, query } from './api.js';
import { attempt, el, num, when } from './dom.js';

const $ = (id) => document.getElementById(id);

/** What the results table shows now, so a delete can redraw it. */
let view = { namespace: null, search: null };

function breakdown(b) {
  if (!b) return '';
  return el('span', { class: 'breakdown' },
    `semantic ${b.semantic.toFixed(2)} · keyword ${b.keyword.toFixed(2)} · `
      + `importance ${b.importance.toFixed(2)} · time ${b.timeDecay.toFixed(2)}`);
}

function row(memory) {
  const address = { key: memory.key, namespace: memory.namespace };
  return el('tr', { 'data-key': memory.key, 'data-namespace': memory.namespace },
    el('td', {}, el('code', {}, memory.key), el('br'),
      el('span', { class: 'muted' }, memory.namespace)),
    el('td', { class: 'value' }, memory.value),
    el('td', { class: 'score' }, memory.score === undefined ? '—' : num(memory.score, 3)),
    el('td', {}, breakdown(memory.breakdown)),
    el('td', { class: 'actions' },
      el('button', { type: 'button', class: 'history-memory', onclick: () => attempt(() => history(address)) },
        'History'),
      el('button', { type: 'button', class: 'delete-memory danger', onclick: () => remove(address) },
        'Delete')));
}

async function namespaces() {
  const { namespaces: all } = await api('GET', 'memory/namespaces');
  const item = (label, namespace, count) => el('li', {},
    el('button', { type: 'button', class: 'link', 'data-namespace': namespace ?? undefined,
      'aria-pressed': String(view.namespace === namespace && !view.search),
      onclick: () => attempt(() => list(namespace)) }, label),
    count === undefined ? '' : el('span', { class: 'count' }, String(count)));
  $('namespaces').replaceChildren(item('All namespaces', null),
    ...all.map((n) => item(n.namespace, n.namespace, n.count)));
}

function results(caption, memories) {
  $('memory-caption').textContent = memories.length ? caption : `${caption}: none.`;
  $('memory-results').tBodies[0].replaceChildren(...memories.map(row));
  $('memory-history').hidden = true;
}

async function list(namespace) {
  view = { namespace, search: null };
  const { data } = await api('GET', `memory/list${query({ namespace, limit: 50 })}`);
  results(namespace ? `Newest memories in ${namespace}` : 'Newest memories', data);
  await namespaces();
}

async function search(text, mode) {
  view = { namespace: view.namespace, search: { text, mode } };
  const body = { query: text, mode, limit: 20 };
  if (view.namespace) body.namespace = view.namespace;
  const { results: hits } = await api('POST', 'memory/search', body);
  results(`Results for “${text}” (${mode})`, hits);
}

/** Who wrote a version (its provenance), the agent as a link to its record. */
function writer(p) {
  if (!p) return '';
  const parts = [p.door.replace('_', ' ')];
  if (p.key_id) parts.push(p.key_id);
  if (p.step) parts.push(`step ${p.step}`);
  if (p.replaced.length) parts.push(`replaced ${p.replaced.length}`);
  const agent = p.agent_id
    ? el('button', { type: 'button', class: 'link agent-link',
      onclick: () => document.dispatchEvent(new CustomEvent('open-agent', { detail: p.agent_id })) },
    p.agent_id)
    : '';
  return el('span', { class: 'muted provenance' }, `by ${parts.join(' · ')} `, agent);
}

async function history({ key, namespace }) {
  const { data } = await api('GET', `memory/history${query({ key, namespace })}`);
  $('memory-history-title').textContent = `History of ${key} (${namespace})`;
  $('memory-history').querySelector('ol').replaceChildren(...data.map((m) => el('li', {},
    el('span', { class: 'kind' }, `v${m.version}`), ' ',
    el('time', {}, when(m.updated_at)), ' ',
    m.observed_at !== m.updated_at ? el('span', { class: 'muted' }, `(observed ${when(m.observed_at)}) `) : '',
    m.deletedAt ? el('span', { class: 'muted' }, '(deleted) ') : '',
    m.value, ' ', writer(m.provenance))));
  $('memory-history').hidden = false;
}

async function remove({ key, namespace }) {
  if (!window.confirm(`Delete ${key} from ${namespace}? Its history is kept.`)) return;
  await attempt(async () => {
    await api('DELETE', `memory${query({ key, namespace })}`);
    if (view.search) await search(view.search.text, view.search.mode);
    else await list(view.namespace);
    await namespaces();
  });
}

export function init() {
  $('memory-search-form').addEventListener('submit', (e) => {
    e.preventDefault();
    attempt(() => search($('memory-search-input').value.trim(), $('memory-mode').value));
  });
}

export function show() {
  return attempt(() => list(view.namespace));
}
