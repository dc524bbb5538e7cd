// API keys: create (the secret is shown once, with a copy button), list, revoke.

import { api } from './api.js';
import { attempt, el, when } from './dom.js';

const $ = (id) => document.getElementById(id);

function row(key) {
  const revoked = key.revoked_at !== null;
  const action = revoked
    ? ''
    : el('button', { type: 'button', class: 'revoke danger', onclick: () => revoke(key.key_id) },
      'Revoke');
  return el('tr', { 'data-key-id': key.key_id, class: revoked ? 'revoked' : undefined },
    el('td', {}, el('code', {}, key.key_id)),
    el('td', {}, when(key.created_at)),
    el('td', {}, revoked ? `revoked ${when(key.revoked_at)}` : 'live'),
    el('td', {}, action));
}

async function load() {
  const { data } = await api('GET', 'console/keys');
  $('keys-table').tBodies[0].replaceChildren(...data.map(row));
}

async function create() {
  const created = await api('POST', 'console/keys');
  $('new-key-secret').textContent = created.key;
  $('new-key-id').textContent = created.key_id;
  $('copy-state').textContent = '';
  $('new-key').hidden = false;
  await load();
}

async function revoke(keyId) {
  if (!window.confirm(`Revoke ${keyId}? Requests with it will be refused at once.`)) return;
  await attempt(async () => {
    await api('DELETE', `console/keys/${encodeURIComponent(keyId)}`);
    await load();
  });
}

async function copy() {
  await navigator.clipboard.writeText($('new-key-secret').textContent)
    .then(() => { $('copy-state').textContent = 'Copied.'; })
    .catch(() => { $('copy-state').textContent = 'Select the key and copy it by hand.'; });
}

/** Wires the buttons once. */
export function init() {
  $('create-key').addEventListener('click', () => attempt(create));
  $('copy-key').addEventListener('click', copy);
}

/** Called each time the section is shown: the secret of an earlier creation is gone. */
export function show() {
  $('new-key').hidden = true;
  $('new-key-secret').textContent = '';
  return attempt(load);
}
