// The plan and its billing, on the usage page: the subscription's state, an upgrade
// (a checkout at the payment provider, where the browser is sent) and "manage billing"
// (the provider's portal). Hidden actions on a server that takes no payments.

import { api } from './api.js';
import { attempt } from './dom.js';

const $ = (id) => document.getElementById(id);

/** Shows the plan and which billing actions apply. */
export async function load() {
  const b = await api('GET', 'billing');
  const sub = b.subscription;
  const paying = sub ? `; subscription ${sub.status} (${sub.plan})` : '';
  const due = sub?.past_due_since ? `, payment failing since ${sub.past_due_since}` : '';
  $('billing-state').textContent = b.billing_enabled
    ? `Plan ${b.plan}${paying}${due}.`
    : `Plan ${b.plan}. This server takes no payments: the operator sets plans.`;
  $('billing-actions').hidden = !b.billing_enabled;
  $('billing-manage').disabled = !b.customer;
}

async function go(path, body) {
  const opened = await api('POST', path, body);
  window.location.assign(opened.url);
}

/** Wires the buttons once. */
export function init() {
  $('billing-upgrade').addEventListener('click',
    () => attempt(() => go('billing/checkout', { plan: $('billing-plan').value })));
  $('billing-manage').addEventListener('click', () => attempt(() => go('billing/portal')));
}
