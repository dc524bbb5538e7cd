"""The README's examples, followed as written: its Python blocks, in order, as one script
against the real server, with WASMIND_URL and WASMIND_API_KEY set as it says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from harness import Server

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_runs(server: Server, key: str, tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) == 2
    script = tmp_path / "readme.py"
    script.write_text("\n".join(blocks))
    env = {**os.environ, "WASMIND_URL": server.base, "WASMIND_API_KEY": key}
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines() == [
        "{'text': 'likes pizza with mushrooms'}",
        "food likes pizza with mushrooms",
        "['pet']",
        "[('users', '42', 'memories')]",
        "None",
        "the launch is on Friday",
    ]
