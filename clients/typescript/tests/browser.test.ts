/**
 * The built package in a real browser: headless Chromium (Debian's, driven over WebDriver
 * by its chromedriver, as the console's browser test does) loads `dist/index.js` as an ES
 * module and uses the API through the browser's own `fetch`. The page's origin serves the
 * package and passes `/api/` through to the server under test, as a site serving its own
 * front end beside the API would.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { type Server as HttpServer, createServer, request } from "node:http";
import { join, normalize } from "node:path";
import { after, test } from "node:test";

import { Browser } from "./support/browser.js";
import { Server, packageDir } from "./support/server.js";

const server = await Server.start();
const site = await serveSite(server.base);
const browser = await Browser.start();
after(async () => {
  await browser.close();
  site.http.close();
  await server.stop();
});

test("the package runs in a browser: calls, errors, pages and follow", async () => {
  const key = server.createKey("browser");
  await browser.goto(`${site.origin}/`);
  const result = await browser.executeAsync(
    `const [key, done] = arguments;
     (async () => {
       const { Wasmind, WasmindError } = await import("/client/index.js");
       const wasmind = new Wasmind({ baseUrl: location.origin, apiKey: key });
       await wasmind.memory.put({ key: "from_the_browser", value: "hello from Chromium" });
       await wasmind.memory.put({ key: "second", value: "another one" });
       const value = (await wasmind.memory.get("from_the_browser")).value;
       const keys = [];
       for await (const m of wasmind.memory.list({ limit: 1 })) keys.push(m.key);
       const error = await wasmind.memory.get("missing").catch((e) => e);
       const refused = await wasmind.components
         .upload(new Blob([new Uint8Array([0, 97, 115, 109])]), { name: "junk", version: "1.0.0" })
         .catch((e) => e);
       const agent = await wasmind.agents.spawn({ task: "Remember that the browser works" });
       const events = [];
       for await (const event of wasmind.agents.follow(agent.agent_id, { intervalMs: 100 })) events.push(event.type);
       return {
         value, keys, events,
         error: [error instanceof WasmindError, error.status, error.code],
         refused: [refused instanceof WasmindError, refused.code],
         node: typeof process,
       };
     })().then(done, (e) => done({ failed: String(e && e.stack || e) }));`,
    [key],
  );
  assert.equal(result.failed, undefined, result.failed);
  assert.equal(result.value, "hello from Chromium");
  assert.deepEqual(result.keys, ["second", "from_the_browser"]);
  assert.deepEqual(result.error, [true, 404, "not_found"]);
  assert.deepEqual(result.refused, [true, "invalid_component"]);
  assert.equal(result.events.at(-1), "end");
  assert.ok(result.events.length > 1, "progress before the end");
  assert.equal(result.node, "undefined", "a real browser, not Node");
});

/** An origin serving `dist/` under `/client/`, an empty page at `/`, and `/api/` from `api`. */
async function serveSite(api: string): Promise<{ http: HttpServer; origin: string }> {
  const dist = join(packageDir, "dist");
  const http = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://site");
    if (url.pathname.startsWith("/api/")) {
      const upstream = request(new URL(req.url ?? "/", api), { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      req.pipe(upstream);
    } else if (url.pathname.startsWith("/client/")) {
      const file = normalize(join(dist, url.pathname.slice("/client/".length)));
      try {
        const body = readFileSync(file.startsWith(dist) ? file : "");
        res.writeHead(200, { "content-type": "text/javascript" }).end(body);
      } catch {
        res.writeHead(404).end();
      }
    } else {
      res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>wasmind client</title>");
    }
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const address = http.address();
  assert.ok(typeof address === "object" && address !== null);
  return { http, origin: `http://127.0.0.1:${address.port}` };
}
