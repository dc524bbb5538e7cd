"""LangGraph's own store tests, fetched at a pinned version from PyPI.

LangGraph's store tests are in the source distributions of its store packages (the
repository's `libs/checkpoint-sqlite/tests`): `test_store.py` (sync) and
`test_async_store.py` (async, `test_large_batches_async` among them). The pinned sdist is
downloaded with pip (checked against its sha256), and each file is written beside this
one with its store fixture renamed `upstream_store`, so that the `store` fixture of
`conftest.py` (InMemoryStore and WasmindStore) is the one its tests get. Nothing else in
the files changes. `python fetch.py` fetches them; `conftest.py` does it when they are
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

PIN = "langgraph-checkpoint-sqlite==3.1.2"
SHA256 = "4e3f376fa6f192d6ad2a1a4643b039986f1593552ef870e9e45281575de6fbf2"
FILES = {"tests/test_store.py": "test_upstream_store.py", "tests/test_async_store.py": "test_upstream_async_store.py"}
HERE = Path(__file__).resolve().parent
STAMP = HERE / ".fetched"


def fetched() -> bool:
    return STAMP.is_file() and STAMP.read_text() == PIN and all((HERE / name).is_file() for name in FILES.values())


def rewrite(text: str) -> str:
    """The module's store fixture renamed (ours replaces it); the async file's import of
    the sync file's test helpers pointed at its new name."""
    text, n = re.subn(r"^((?:async )?def )store\(", r"\1upstream_store(", text, flags=re.M)
    if n != 1:
        raise RuntimeError(f"expected one store fixture, found {n}: the pin's files changed")
    return text.replace("from tests.test_store import", "from test_upstream_store import")


def fetch() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
             "--no-deps", "--no-binary", ":all:", "--dest", tmp, PIN],
            check=True,
        )
        (sdist,) = Path(tmp).glob("*.tar.gz")
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        if digest != SHA256:
            raise RuntimeError(f"{sdist.name} has sha256 {digest}, the pin says {SHA256}")
        with tarfile.open(sdist) as archive:
            top = archive.getnames()[0].split("/")[0]
            for inner, name in FILES.items():
                member = archive.extractfile(f"{top}/{inner}")
                assert member is not None
                (HERE / name).write_text(rewrite(member.read().decode()))
    STAMP.write_text(PIN)


if __name__ == "__main__":
    fetch()
