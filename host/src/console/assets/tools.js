// The tools the account's agents may call: HTTP endpoints and MCP servers (each server with
// its tools as last listed, or why it could not be listed). Read-only; secrets are never
// answered, only whether one is set.

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
  return el('tr', { 'data-tool': tool.name },
    el('td', {}, el('code', {}, tool.name)),
    el('td', {}, tool.kind),
    el('td', {}, el('code', {}, target(tool))),
    el('td', {}, secret),
    el('td', {}, offers(tool)));
}

async function load() {
  const { data } = await api('GET', 'tools');
  $('tools-table').tBodies[0].replaceChildren(...data.map(row));
  $('tools-empty').hidden = data.length > 0;
}

/** Called each time the section is shown. */
export function show() {
  return attempt(load);
}
