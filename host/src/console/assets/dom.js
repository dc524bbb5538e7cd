// Small DOM helpers shared by the sections: element building (text only, never HTML
// strings, so nothing from the API is ever parsed as markup), times and the notice line.

/** `el('td', { class: 'status' }, 'running')`: attributes, then children (nodes or text). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value);
  }
  node.append(...children.filter((c) => c !== undefined && c !== null));
  return node;
}

/** An epoch-ms number or an RFC 3339 string as `2026-11-23 20:41:07 UTC`. */
export function when(time) {
  if (time === null || time === undefined) return '';
  return `${new Date(time).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** A number with at most `digits` decimals. */
export const num = (value, digits = 2) =>
  Number(value).toLocaleString('en', { maximumFractionDigits: digits });

/** Shows an error (or clears it with ''). */
export function notice(message) {
  document.getElementById('notice').textContent = message;
}

/** Runs an async action, showing its failure in the notice line instead of throwing. */
export async function attempt(action) {
  try {
    notice('');
    return await action();
  } catch (error) {
    if (error.status !== 401) notice(error.message);
    return undefined;
  }
}
