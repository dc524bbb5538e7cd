// The tools the account's agents may call: HTTP endpoints and MCP servers (each server with
// its tools as last listed, or why it could not be listed). Registered, listed again and
// deleted here; secrets go in and are never answered, only whether one is set.

import { api } from './api.js';
import { attempt, el, when } from './dom.js';

const $ = (id) => document.getElementById(id);

/** Where the tool's calls go. */
function target(tool) {
  return tool.kind === 'http' ? `${tool.endpoint.method} ${tool.endpoint.url}` : tool.url;
}

/** An MCP server's tools, or why they are missing; an HTTP tool's description. */
function offers(tool) {
  if (tool.kind === 'http') return tool.description;
  if (tool.list_error) return el('span', { class: 'error' }, `not listed: ${tool.list_error}`);
  if (tool.tools === null) return el('span', { class: 'muted' }, 'listed on first use');
  const names = tool.tools.map((t) => el('li', {}, el('code', {}, t.name), ` ${t.description}`));
  return el('ul', { class: 'plain' }, ...names,
    el('li', { class: 'muted' }, `listed ${when(tool.listed_at)}`));
}

function row(tool) {
  const secret = tool.has_secret
    ? `set${tool.secret_header_name ? ` (${tool.secret_header_name})` : ''}`
    : 'none';
  const path = `tools/${encodeURIComponent(tool.name)}`;
  const refresh = tool.kind === 'mcp'
    ? el('button', { type: 'button', class: 'refresh-tool', onclick: () => change('POST', `${path}/refresh`) },
      'List again')
    : undefined;
  const remove = el('button', {
    type: 'button',
    class: 'delete-tool danger',
    onclick: () => window.confirm(`Delete ${tool.name}? Agents stop seeing it at once.`)
      && change('DELETE', path),
  }, 'Delete');
  return el('tr', { 'data-tool': tool.name },
    el('td', {}, el('code', {}, tool.name)),
    el('td', {}, tool.kind),
    el('td', {}, el('code', {}, target(tool))),
    el('td', {}, secret),
    el('td', {}, offers(tool)),
    el('td', {}, refresh, remove));
}

async function load() {
  const { data } = await api('GET', 'tools');
  $('tools-table').tBodies[0].replaceChildren(...data.map(row));
  $('tools-empty').hidden = data.length > 0;
}

/** A row's action, then the list again (the list shows a failed listing's reason). */
async function change(method, path) {
  await attempt(async () => {
    try {
      await api(method, path);
    } finally {
      await load();
    }
  });
}

/** The registration the form describes, as POST /api/v1/tools takes it. */
function registration() {
  const kind = $('tool-kind').value;
  const secret = $('tool-secret').value;
  const body = { kind, name: $('tool-name').value, description: $('tool-description').value };
  if (kind === 'mcp') {
    return { ...body, url: $('tool-url').value, bearer: secret || undefined };
  }
  let parameters;
  try {
    parameters = JSON.parse($('tool-parameters').value);
  } catch (e) {
    throw new Error(`The JSON Schema of the arguments is not JSON: ${e.message}`);
  }
  const header = $('tool-header-name').value;
  return {
    ...body,
    endpoint: { url: $('tool-url').value, method: $('tool-method').value },
    parameters,
    secret_header: header ? { name: header, value: secret } : undefined,
  };
}

async function register(event) {
  event.preventDefault();
  $('tool-state').textContent = '';
  await attempt(async () => {
    const created = await api('POST', 'tools', registration());
    $('tool-state').textContent = `Registered ${created.name}.`;
    $('tool-secret').value = '';
    await load();
  });
}

/** Shows the fields of the chosen kind. */
function kindChanged() {
  $('tool-http-fields').hidden = $('tool-kind').value !== 'http';
}

/** Wires the form once. */
export function init() {
  $('tool-form').addEventListener('submit', register);
  $('tool-kind').addEventListener('change', kindChanged);
  kindChanged();
}

/** Called each time the section is shown. */
export function show() {
  $('tool-state').textContent = '';
  return attempt(load);
}
