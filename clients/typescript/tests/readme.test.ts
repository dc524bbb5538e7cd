/**
 * The README's examples, followed as written: a project of its own installs this package
 * from its directory, and runs (and type-checks) each example against a server, with only
 * the address changed to the test server's (which may reach the Tools example's endpoint).
 */
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { promisify } from "node:util";

import { Origin } from "./support/origin.js";
import { Server, packageDir } from "./support/server.js";

const execFileAsync = promisify(execFile);

const origin = await Origin.start();
const server = await Server.start({ config: origin.egressConfig() });
const project = mkdtempSync(join(tmpdir(), "wasmind-ts-readme-"));
after(async () => {
  rmSync(project, { recursive: true, force: true });
  await server.stop();
  await origin.close();
});

/** The first code block of `language` under the README's heading `heading`. */
function snippet(heading: string, language: string): string {
  const readme = readFileSync(join(packageDir, "README.md"), "utf8");
  const section = readme.split(`\n## ${heading}\n`)[1];
  const block = section?.split(`\`\`\`${language}\n`)[1]?.split("\n```")[0];
  assert.ok(block !== undefined, `the README has a ${language} block under "${heading}"`);
  return block;
}

let installed = false;

/** The README's Install step, once, in `project`. */
function install(): void {
  if (installed) {
    return;
  }
  assert.equal(snippet("Install", "sh").trim(), "npm install /path/to/wasmind/clients/typescript");
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "hello-wasmind", private: true }));
  // Offline: the package has no dependencies to fetch.
  execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", packageDir], {
    cwd: project,
    stdio: ["ignore", "ignore", "inherit"],
  });
  installed = true;
}

/**
 * The README's js block under `heading`, saved as `file` in the installed project with only
 * the address changed, type-checked as TypeScript and run with `env`; its output lines.
 */
async function run(heading: string, file: string, env: Record<string, string>): Promise<string[]> {
  install();
  const example = snippet(heading, "js");
  assert.match(example, /"http:\/\/localhost:8080"/);
  writeFileSync(join(project, file), example.replace("http://localhost:8080", server.base));
  // It type-checks as TypeScript, against the installed package's own types.
  const tsc = join(packageDir, "node_modules/typescript/bin/tsc");
  execFileSync(
    process.execPath,
    [tsc, "--noEmit", "--strict", "--allowJs", "--checkJs", "--module", "nodenext", "--target", "es2022", "--skipLibCheck", "--types", "node", "--typeRoots", join(packageDir, "node_modules/@types"), file],
    { cwd: project, stdio: ["ignore", "inherit", "inherit"] },
  );
  // Not execFileSync: the origin the Tools example calls answers from this process's event loop.
  const { stdout } = await execFileAsync(process.execPath, [file], { cwd: project, env: { ...process.env, ...env }, encoding: "utf8" });
  return stdout.trim().split("\n");
}

test("the README's example runs as written against a server", async () => {
  const lines = await run("Example", "example.mjs", { KEY: server.createKey("acme") });
  const out = lines.join("\n");
  assert.equal(lines[0], "found: favourite_food", out);
  assert.match(lines.at(-1) ?? "", /^completed \S/, out);
  assert.ok(lines.slice(1, -1).every((line) => /^\[\w+\] /.test(line)), out);
});

test("the README's Tools example runs as written against a server that may reach its endpoint", async () => {
  const lines = await run("Tools", "tools.mjs", { KEY: server.createKey("tools"), WEATHER_URL: `${origin.url}/weather` });
  assert.deepEqual(lines, ["true weather", "sunny in Oslo", "400 invalid_arguments", "offered: weather"]);
});
