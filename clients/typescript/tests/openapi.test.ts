/**
 * The client cannot drift from the server: its types are generated from openapi.json, and
 * this holds openapi.json to the document the server under test serves. When the server's
 * contract changes, run ./update-openapi: the typecheck then shows what code must follow.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";

import { Server, packageDir } from "./support/server.js";

const server = await Server.start();
after(() => server.stop());

test("the committed OpenAPI document is the one the server serves", async () => {
  const key = server.createKey("drift");
  const served = await server.client(key).openapi();
  const committed: unknown = JSON.parse(readFileSync(join(packageDir, "openapi.json"), "utf8"));
  const differences = diff(committed, served, "");
  assert.deepEqual(
    differences.slice(0, 20),
    [],
    `clients/typescript/openapi.json differs from the server's document in ${differences.length} places ` +
      "(committed → served); run clients/typescript/update-openapi and fix what the typecheck then shows",
  );
});

/** Where `a` and `b` differ, as JSON pointers (RFC 6901) with both values (objects key by key). */
function diff(a: unknown, b: unknown, at: string): string[] {
  if (typeof a === "object" && a !== null && typeof b === "object" && b !== null && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].flatMap((k) => diff((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${at}/${k.replaceAll("~", "~0").replaceAll("/", "~1")}`));
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [`${at || "/"}: ${brief(a)} → ${brief(b)}`];
}

function brief(value: unknown): string {
  const text = value === undefined ? "(absent)" : JSON.stringify(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
