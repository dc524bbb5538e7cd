/**
 * The README's example, followed as written: a project of its own installs this package
 * from its directory, and runs (and type-checks) the example against a server, with only
 * the address changed to the test server's.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { Server, packageDir } from "./support/server.js";

const server = await Server.start();
const project = mkdtempSync(join(tmpdir(), "wasmind-ts-readme-"));
after(async () => {
  rmSync(project, { recursive: true, force: true });
  await server.stop();
});

/** The first code block of `language` under the README's heading `heading`. */
function snippet(heading: string, language: string): string {
  const readme = readFileSync(join(packageDir, "README.md"), "utf8");
  const section = readme.split(`\n## ${heading}\n`)[1];
  const block = section?.split(`\`\`\`${language}\n`)[1]?.split("\n```")[0];
  assert.ok(block !== undefined, `the README has a ${language} block under "${heading}"`);
  return block;
}

test("the README's example runs as written against a server", () => {
  assert.equal(snippet("Install", "sh").trim(), "npm install /path/to/wasmind/clients/typescript");
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "hello-wasmind", private: true }));
  // Offline: the package has no dependencies to fetch.
  execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", packageDir], {
    cwd: project,
    stdio: ["ignore", "ignore", "inherit"],
  });

  const example = snippet("Example", "js");
  assert.match(example, /"http:\/\/localhost:8080"/);
  writeFileSync(join(project, "example.mjs"), example.replace("http://localhost:8080", server.base));
  // It type-checks as TypeScript, against the installed package's own types.
  const tsc = join(packageDir, "node_modules/typescript/bin/tsc");
  execFileSync(
    process.execPath,
    [tsc, "--noEmit", "--strict", "--allowJs", "--checkJs", "--module", "nodenext", "--target", "es2022", "--skipLibCheck", "--types", "node", "--typeRoots", join(packageDir, "node_modules/@types"), "example.mjs"],
    { cwd: project, stdio: ["ignore", "inherit", "inherit"] },
  );

  const out = execFileSync(process.execPath, ["example.mjs"], {
    cwd: project,
    env: { ...process.env, KEY: server.createKey("acme") },
    encoding: "utf8",
  });
  const lines = out.trim().split("\n");
  assert.equal(lines[0], "found: favourite_food", out);
  assert.match(lines.at(-1) ?? "", /^completed \S/, out);
  assert.ok(lines.slice(1, -1).every((line) => /^\[\w+\] /.test(line)), out);
});
