// The bindings' declarations in `types/` are what jco makes from the WIT now, and
// `src/host.js` — the SDK's one user of the bindings — type-checks against them
// (`tsconfig.json`): a WIT change the SDK has not followed fails here, natively, before
// any component is built.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { guestTypes } from '../bin/guest-types.js';

const sdk = resolve(dirname(fileURLToPath(import.meta.url)), '..');

test('the committed declarations are what the WIT makes', async () => {
  const made = await guestTypes();
  assert.ok(Object.keys(made).length >= 6, 'one per interface and the world');
  for (const [name, text] of Object.entries(made)) {
    const committed = readFileSync(join(sdk, 'types', name), 'utf8');
    assert.equal(committed, Buffer.from(text).toString('utf8'), `types/${name} is stale: run bin/guest-types.js`);
  }
});

test('host.js type-checks against the declarations', () => {
  const tsc = join(sdk, 'node_modules', '.bin', 'tsc');
  // Throws, with tsc's errors in its output, when a check fails.
  execFileSync(tsc, ['-p', sdk], { encoding: 'utf8', stdio: 'pipe' });
});
