#!/usr/bin/env node
// `guest-types.js [DIR]`: the TypeScript declarations of the `wasmind:agent` world's imports
// (one ambient module per interface, `declare module 'wasmind:agent/memory@0.1.0'`), made
// by jco from the WIT in `wit/` and written to DIR (default `types/`, where they are
// committed). `tsconfig.json` checks `src/host.js`, the SDK's one use of the bindings,
// against them, and `test/types.test.js` fails when the committed ones are not what the
// WIT makes now.
//
// jco's own `jco guest-types` cannot read the WIT here: its WASI shim (preview2-shim 0.26)
// gives the type generator no file system unless preopens are set ("os error 44"), so this
// sets the host's root as the one preopen, then calls the same generator.

import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const sdk = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The declarations jco makes from `wit/`, by relative path. */
export async function guestTypes() {
  const require = createRequire(import.meta.url);
  const transpile = require.resolve('@bytecodealliance/jco-transpile');
  const shim = createRequire(transpile).resolve('@bytecodealliance/preview2-shim/filesystem');
  (await import(pathToFileURL(shim).href))._setPreopens({ '/': '/' });
  const { generateGuestTypes } = await import('@bytecodealliance/jco-transpile');
  return generateGuestTypes(join(sdk, 'wit'), { worldName: 'agent' });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = resolve(process.argv[2] ?? join(sdk, 'types'));
  for (const [name, text] of Object.entries(await guestTypes())) {
    await mkdir(dirname(join(out, name)), { recursive: true });
    await writeFile(join(out, name), text);
  }
}
