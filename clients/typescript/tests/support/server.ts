/**
 * The real `wasmind` binary (`WASMIND_BIN`, default the checkout's target/debug/wasmind),
 * started by the tests on a temp data dir and a free loopback port, with the real embedder;
 * on PostgreSQL when `WASMIND_E2E_BACKEND=postgres` (a database of its own on the
 * process's one PostgreSQL), as host/tests/e2e/common starts it.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { Wasmind, type WasmindOptions } from "../../src/index.js";
import { Postgres } from "./postgres.js";

/** The package's own directory (clients/typescript), wherever this file was compiled to. */
export const packageDir = findUp(dirname(fileURLToPath(import.meta.url)), "package.json");

/** The binary under test. */
export const binary = process.env["WASMIND_BIN"] ?? resolve(packageDir, "../../target/debug/wasmind");

export const onPostgres = process.env["WASMIND_E2E_BACKEND"] === "postgres";

export interface StartOptions {
  /** TOML configuration (the storage section is added on PostgreSQL). */
  config?: string;
}

export class Server {
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    private readonly storageConfigPath: string | undefined,
    /** `http://127.0.0.1:PORT`. */
    readonly base: string,
    private readonly logLines: string[],
  ) {}

  /** Starts `wasmind serve` and waits until it is ready (`/readyz` is 200). */
  static async start(options: StartOptions = {}): Promise<Server> {
    if (!existsSync(binary)) {
      throw new Error(`no wasmind binary at ${binary}: build it (cargo build -p wasmind) or set WASMIND_BIN`);
    }
    const dir = mkdtempSync(join(tmpdir(), "wasmind-ts-"));
    let config = options.config;
    let storageConfigPath: string | undefined;
    if (onPostgres) {
      const pg = await Postgres.get();
      const storage = `\n[storage]\nbackend = "postgres"\ndatabase_url = "${pg.database(`ts_${basename(dir).replace(/\W/g, "_").toLowerCase()}`)}"\n`;
      config = (config ?? "") + storage;
      // The operator commands reach the server's database, as the e2e harness's `cli` does.
      storageConfigPath = join(dir, "cli.toml");
      writeFileSync(storageConfigPath, storage);
    }
    let configPath: string | undefined;
    if (config !== undefined) {
      configPath = join(dir, "wasmind.toml");
      writeFileSync(configPath, config);
    }
    // The key that seals tools' secrets: the test's own, outside the data dir (as the server
    // requires), not the user's ~/.config/wasmind/tools.key.
    const env: NodeJS.ProcessEnv = { ...process.env, WASMIND_LOG: "info", WASMIND_TOOLS_KEY_FILE: join(dir, "tools.key") };
    // The binary finds its checkout's models/ itself (walking up from target/debug).
    for (const name of ["WASMIND_MODEL_DIR", "WASMIND_HOME", "WASMIND_CONFIG"]) {
      delete env[name];
    }
    const args = ["serve", "--data-dir", join(dir, "data"), "--listen", "127.0.0.1:0"];
    const child = spawn(binary, configPath === undefined ? args : [...args, "--config", configPath], {
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    // Never outlives the tests, however they end.
    process.once("exit", () => child.kill("SIGKILL"));
    const lines: string[] = [];
    const ready = new Promise<string>((resolveReady, reject) => {
      let buffered = "";
      child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
        buffered += chunk;
        let newline: number;
        while ((newline = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          lines.push(line);
          // Logged once the embedder, indexes and runtime are up.
          const listening = /listening on (http:\/\/[^\s"]+)/.exec(line);
          if (listening?.[1] !== undefined) {
            resolveReady(listening[1]);
          }
        }
      });
      child.once("exit", (code, signal) => reject(new Error(`wasmind serve exited (${code ?? signal}):\n${lines.join("\n")}`)));
    });
    const timeout = setTimeout(() => child.kill("SIGKILL"), 120_000);
    try {
      const base = await ready;
      return new Server(child, dir, storageConfigPath, base, lines);
    } finally {
      clearTimeout(timeout);
    }
  }

  /** A new key for `account` on `plan`, made with the CLI while the server runs. */
  createKey(account: string, plan: "free" | "liftoff" | "lightyear" = "lightyear"): string {
    const args = ["keys", "create", "--data-dir", join(this.dir, "data"), "--account", account, "--plan", plan];
    if (this.storageConfigPath !== undefined) {
      args.push("--config", this.storageConfigPath);
    }
    return execFileSync(binary, args, { encoding: "utf8" }).trim();
  }

  /** A client of this server with `key`. */
  client(key: string, options: Partial<WasmindOptions> = {}): Wasmind {
    return new Wasmind({ baseUrl: this.base, apiKey: key, ...options });
  }

  /** Everything the server logged so far. */
  log(): string {
    return this.logLines.join("\n");
  }

  /** Stops the server gracefully and deletes its data dir. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolveExit) => this.child.once("exit", resolveExit));
      this.child.kill("SIGTERM");
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The bytes of a guest component the checkout built beside the binary
 * (`<target>/guests/wasm32-wasip2/release/NAME.wasm`: the examples' and tests/guests').
 */
export function guest(name: "notes_agent" | "guest_linger"): Uint8Array {
  const path = resolve(dirname(binary), `../guests/wasm32-wasip2/release/${name}.wasm`);
  if (!existsSync(path)) {
    throw new Error(`no component at ${path}: building wasmind (cargo build -p wasmind) builds the guests`);
  }
  return readFileSync(path);
}

function findUp(start: string, file: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (readdirSync(dir).includes(file)) {
      return dir;
    }
    if (dirname(dir) === dir) {
      throw new Error(`no ${file} above ${start}`);
    }
  }
}
