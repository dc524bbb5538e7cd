"""LangGraph's own store tests, fetched at a pinned version from PyPI.

LangGraph's store tests are in the source distributions of its SQL store packages (the
repository's `libs/checkpoint-sqlite/tests` and `libs/checkpoint-postgres/tests`):
`test_store.py` (sync) and `test_async_store.py` (async, `test_large_batches_async` among
them) of each. (`langgraph-checkpoint`'s own `tests/test_store.py` builds `InMemoryStore`
in each test, with no fixture to replace.) The pinned sdists are downloaded with pip
(checked against their sha256), and each file is written beside this one under a name of
its own, with its store fixture renamed `upstream_store`, so that the `store` fixture of
`conftest.py` (InMemoryStore and WasmindStore) is the one its tests get, and its imports
of its package's test helpers pointed at their new names. Nothing else changes. `python fetch.py` fetches them; `conftest.py` does it when they are
missing or of another pin.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

SDISTS = {
    "langgraph-checkpoint-sqlite==3.1.2": (
        "4e3f376fa6f192d6ad2a1a4643b039986f1593552ef870e9e45281575de6fbf2",
        {"tests/test_store.py": "test_sqlite_store.py", "tests/test_async_store.py": "test_sqlite_async_store.py"},
    ),
    "langgraph-checkpoint-postgres==3.2.0": (
        "dffef0e6822d7c614019f7f2c4bdbef42859746aee2d3e6d9d9747cf3744ca90",
        {
            "tests/test_store.py": "test_postgres_store.py",
            "tests/test_async_store.py": "test_postgres_async_store.py",
            "tests/conftest.py": "postgres_helpers.py",  # not a conftest here: only its names are imported
            "tests/embed_test_utils.py": "postgres_embed_test_utils.py",
        },
    ),
}
IMPORTS = {
    "test_sqlite_store.py": "test_sqlite_store",
    "test_sqlite_async_store.py": "test_sqlite_store",
    "test_postgres_store.py": "postgres_helpers",
    "test_postgres_async_store.py": "postgres_helpers",
    "postgres_helpers.py": "postgres_embed_test_utils",
}
"""The module each file's `from tests.… import` means, under its new name."""
HERE = Path(__file__).resolve().parent
STAMP = HERE / ".fetched"


def stamp() -> str:
    return "\n".join(f"{pin} {sha}" for pin, (sha, _) in SDISTS.items())


def fetched() -> bool:
    names = [name for _, files in SDISTS.values() for name in files.values()]
    return STAMP.is_file() and STAMP.read_text() == stamp() and all((HERE / n).is_file() for n in names)


def rewrite(name: str, text: str) -> str:
    """A test module's store fixture renamed (ours replaces it); imports of the package's
    test helpers (`from tests.x import`) pointed at their new names."""
    if name.startswith("test_"):
        text, n = re.subn(r"^((?:async )?def )store\(", r"\1upstream_store(", text, flags=re.M)
        if n != 1:
            raise RuntimeError(f"expected one store fixture in {name}, found {n}: the pin's files changed")
    return re.sub(r"^from tests\.\w+ import", f"from {IMPORTS.get(name, '?')} import", text, flags=re.M)


def fetch() -> None:
    for pin, (sha, files) in SDISTS.items():
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                 "--no-deps", "--no-binary", ":all:", "--dest", tmp, pin],
                check=True,
            )
            (sdist,) = Path(tmp).glob("*.tar.gz")
            digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
            if digest != sha:
                raise RuntimeError(f"{sdist.name} has sha256 {digest}, the pin says {sha}")
            with tarfile.open(sdist) as archive:
                top = archive.getnames()[0].split("/")[0]
                for inner, name in files.items():
                    member = archive.extractfile(f"{top}/{inner}")
                    assert member is not None
                    (HERE / name).write_text(rewrite(name, member.read().decode()))
    STAMP.write_text(stamp())


if __name__ == "__main__":
    fetch()
