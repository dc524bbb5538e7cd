#!/usr/bin/env node
// `build.js AGENT.js -o AGENT.wasm`: the component of the agent whose module `AGENT.js`
// exports `run(ctx, task)`. One ES module is bundled (rolldown) from an entry that exports
// the world's `run` through `host.js`, the agent and the SDK (imported as
// `@wasmind/agent-sdk`, resolved to this SDK, so a project needs no node_modules of its
// own), the `wasmind:agent` imports left to the component; componentize-js then makes it a
// component of the world in `wit/` (SpiderMonkey and the module, pre-initialised).
//
// Import every module the agent uses statically: the build runs the module's top level and
// snapshots the engine, and the sandbox has no file system to load from during a run.

import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { componentize } from '@bytecodealliance/componentize-js';
import { rolldown } from 'rolldown';

const sdk = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values, positionals } = parseArgs({
  options: { out: { type: 'string', short: 'o' } },
  allowPositionals: true,
});
if (positionals.length !== 1 || !values.out) {
  console.error('usage: build.js AGENT.js -o AGENT.wasm');
  process.exit(2);
}
const agent = resolve(positionals[0]);
const work = await mkdtemp(join(tmpdir(), 'wasmind-agent-build-'));
try {
  const entry = join(work, 'entry.js');
  await writeFile(
    entry,
    `import { exportAgent } from ${JSON.stringify(join(sdk, 'src/host.js'))};\n` +
      `import { run as agent } from ${JSON.stringify(agent)};\n` +
      'export const run = exportAgent(agent);\n',
  );
  const bundle = await rolldown({
    input: entry,
    external: [/^wasmind:/],
    resolve: { alias: { '@wasmind/agent-sdk': join(sdk, 'src/index.js') } },
    logLevel: 'warn',
  });
  const bundled = join(work, 'bundle.js');
  await bundle.write({ file: bundled, format: 'esm' });
  await bundle.close();
  const { component } = await componentize({
    sourcePath: bundled,
    // The WIT the SDK carries (a link to the Rust SDK's), resolved.
    witPath: await realpath(join(sdk, 'wit')),
    worldName: 'agent',
  });
  await writeFile(values.out, component);
} finally {
  await rm(work, { recursive: true, force: true });
}
