/**
 * Headless Chromium (Debian's, from scripts/setup-tests.d/30-chromium) driven over W3C WebDriver by
 * its chromedriver, with the flags of host/tests/e2e/common/browser.rs. A missing browser
 * fails the test with what to run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { freePort } from "./net.js";

/** Headless Chromium through chromedriver's W3C WebDriver endpoints. */
export class Browser {
  private constructor(
    private readonly driver: ChildProcess,
    private readonly webdriver: string,
    private readonly session: string,
    private readonly profile: string,
  ) {}

  static async start(): Promise<Browser> {
    const port = await freePort();
    const driver = spawn("chromedriver", [`--port=${port}`], { stdio: "ignore" });
    const failed = new Promise<never>((_, reject) =>
      driver.once("error", (e) => reject(new Error(`chromedriver did not start (${e.message}): run scripts/setup`))),
    );
    process.once("exit", () => driver.kill("SIGKILL"));
    const webdriver = `http://127.0.0.1:${port}`;
    const profile = mkdtempSync(join(tmpdir(), "wasmind-ts-chromium-"));
    const capabilities = {
      browserName: "chrome",
      "goog:chromeOptions": {
        // The flags of host/tests/e2e/common/browser.rs: headless, no sandbox (root in a
        // container), and no traffic of Chromium's own.
        args: [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          "--disable-dev-shm-usage",
          `--user-data-dir=${profile}`,
        ],
      },
    };
    // chromedriver listens a moment after it starts: ask until it answers.
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        const { sessionId } = await Promise.race([
          failed,
          send(webdriver, "POST", "/session", { capabilities: { alwaysMatch: capabilities } }),
        ]);
        return new Browser(driver, webdriver, String(sessionId), profile);
      } catch (e) {
        if (Date.now() > deadline || !(e instanceof TypeError)) {
          driver.kill("SIGKILL");
          throw e;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  async goto(url: string): Promise<void> {
    await send(this.webdriver, "POST", `/session/${this.session}/url`, { url });
  }

  /** Runs `script` in the page; its last argument is the callback that gives the result. */
  async executeAsync(script: string, args: unknown[]): Promise<Record<string, any>> {
    await send(this.webdriver, "POST", `/session/${this.session}/timeouts`, { script: 60_000 });
    return send(this.webdriver, "POST", `/session/${this.session}/execute/async`, { script, args });
  }

  async close(): Promise<void> {
    await send(this.webdriver, "DELETE", `/session/${this.session}`).catch(() => undefined);
    this.driver.kill("SIGKILL");
    rmSync(this.profile, { recursive: true, force: true });
  }
}

/** One WebDriver command; its `value`, or an error saying what the driver answered. */
async function send(webdriver: string, method: string, path: string, body?: unknown): Promise<Record<string, any>> {
  const response = await fetch(`${webdriver}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const { value } = (await response.json()) as { value: Record<string, any> };
  if (!response.ok) {
    throw new Error(`WebDriver ${method} ${path}: ${JSON.stringify(value)}`);
  }
  return value;
}