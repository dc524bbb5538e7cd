"""The package is typed (`py.typed`): mypy --strict accepts both packages' sources, and
sees the clients' methods with their real parameter and result types — a wrong argument
is an error, as a user's editor would show it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

USAGE = """
from wasmind import AsyncClient, Client, End, Progress

async def check(a: AsyncClient) -> None:
    hits = await a.memory.search("q")
    score: float = hits[0]["score"]
    async for event in a.agents.follow("ag_x"):
        if isinstance(event, End):
            status: str = event.status

c = Client()
memory = c.memory.put("k", "v")
version: int = memory["version"]
for m in c.memory.list(page_size=10):
    key: str = m["key"]
for v in c.memory.history("k", page_size=10):
    number: int = v["version"]
tool = c.tools.register({"kind": "mcp", "name": "calc", "url": "https://mcp.example/mcp"})
has_secret: bool = tool["has_secret"]
result: str = c.tools.call("calc", {"a": 1})
names: list[str] = [t["name"] for t in c.tools.list()]
c.memory.put("k", 3)
"""


def mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", *args],
                          capture_output=True, text=True, cwd=ROOT)


def test_the_sources_pass_mypy_strict() -> None:
    out = mypy("clients/python/src/wasmind", "integrations/langgraph/src/wasmind_langgraph")
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_users_code_is_checked_against_the_real_signatures(tmp_path: Path) -> None:
    usage = tmp_path / "usage.py"
    usage.write_text(USAGE)
    out = mypy(str(usage))
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and 'Argument 2 has incompatible type "int"; expected "str"' in errors[0], out.stdout
