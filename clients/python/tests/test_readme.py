"""The README's examples, followed as written: its Python blocks, in order, run as one
script against the real server, with WASMIND_URL and WASMIND_API_KEY set as it says, the
component it uploads in the working directory, and WEATHER_URL an endpoint of the origin the
server may reach."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from harness import Server, notes_agent
from origin import Origin

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_runs(server: Server, key: str, origin: Origin, tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 5
    (tmp_path / "notes_agent.wasm").write_bytes(notes_agent())
    script = tmp_path / "readme.py"
    script.write_text("\n".join(blocks))
    env = {**os.environ, "WASMIND_URL": server.base, "WASMIND_API_KEY": key,
           "WEATHER_URL": origin.url + "/weather"}
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("favourite_food "), lines
    assert "['sushi', 'pizza with mushrooms']" in lines and "2" in lines
    assert any(line.startswith("404 not_found") for line in lines)
    assert any(line.startswith("completed ") for line in lines)
    assert any(line.startswith("invalid_key {'field': 'key'}") for line in lines)
    assert "the team has five people" in lines
    assert "True ['weather']" in lines and "sunny in Oslo" in lines
    assert "400 invalid_arguments" in lines and "['weather']" in lines


def test_the_root_readmes_python_minutes_run(server: Server, key: str, tmp_path: Path) -> None:
    """The root README's "first ten minutes with Python" (until the lead moves it there,
    docs/pending/python.md): the Python of its heredoc, with KEY as that section makes it."""
    root = Path(__file__).resolve().parents[3]
    sources = [root / "README.md", root / "docs" / "pending" / "python.md"]
    found = [m for p in sources if p.exists()
             for m in re.findall(r"pip install \./clients/python\n.*?<<'PY'\n(.*?)\nPY\n", p.read_text(), re.S)]
    assert found, "no Python snippet in the root README (or docs/pending/python.md)"
    env = {**os.environ, "WASMIND_URL": server.base, "WASMIND_API_KEY": key}
    out = subprocess.run([sys.executable, "-c", found[0]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "pizza with mushrooms" and lines[-1] == "completed", lines
