// The console's entry point: signing in (an ID token from the `#token=` fragment that
// `wasmind console login` prints, or pasted), the account header, and switching sections.

import { api, clearToken, onUnauthorized, setToken, token } from './api.js';
import * as agents from './agents.js';
import * as keys from './keys.js';
import * as memory from './memory.js';
import * as tools from './tools.js';
import * as usage from './usage.js';

const $ = (id) => document.getElementById(id);
const sections = { keys, agents, memory, tools, usage };
let current = null;

/** Takes a token from the fragment into sessionStorage and out of the address bar. */
function tokenFromFragment() {
  const match = /^#token=(.+)$/.exec(window.location.hash);
  if (!match) return;
  setToken(decodeURIComponent(match[1]));
  window.history.replaceState(null, '', window.location.pathname + window.location.search);
}

function showSection(name) {
  if (current && current !== name) sections[current].hide?.();
  current = name;
  for (const other of Object.keys(sections)) {
    $(other).hidden = other !== name;
    $(`nav-${other}`).setAttribute('aria-current', other === name ? 'page' : 'false');
  }
  return sections[name].show();
}

function signedOut(message = '') {
  if (current) sections[current].hide?.();
  current = null;
  $('app').hidden = true;
  $('who').hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = message;
  $('token-input').value = '';
}

async function signIn() {
  if (!token()) {
    signedOut();
    return;
  }
  try {
    const me = await api('GET', 'console/me');
    $('account').textContent = me.account;
    $('plan').textContent = `plan ${me.plan}`;
    $('who').hidden = false;
    $('signin').hidden = true;
    $('app').hidden = false;
    await showSection(current ?? 'keys');
  } catch (error) {
    if (error.status !== 401) signedOut(error.message);
  }
}

onUnauthorized((message) => signedOut(message));
$('signin-form').addEventListener('submit', (e) => {
  e.preventDefault();
  setToken($('token-input').value.trim());
  signIn();
});
$('signout').addEventListener('click', () => {
  clearToken();
  signedOut();
});
for (const name of Object.keys(sections)) {
  sections[name].init?.();
  $(`nav-${name}`).addEventListener('click', () => showSection(name));
}
// A link to an agent (a memory version's writer) opens its detail in the agents section.
document.addEventListener('open-agent', (e) => {
  agents.select(e.detail);
  showSection('agents');
});
tokenFromFragment();
signIn();
