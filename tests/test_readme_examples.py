"""README.md's examples run as written: a new user copy-pastes them first.

The install line's `pip install -e .` is the one part not run here (the suite
already runs from an installed Lore); what follows it, and the Python API
example, run for real in a scratch folder.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import lore

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README.read_text(), re.S | re.M)


def test_the_quick_start_after_pip_install_runs_as_written(tmp_path):
    (line,) = [b for b in blocks("sh") if "pip install" in b]
    before, sep, after = line.strip().partition("pip install -e . && ")
    assert sep and after.startswith('cd "$(mktemp -d)" && ')  # a fresh folder, whoever runs it again
    script = after
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "lore"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -P -m lore "$@"\n')
    shim.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "NO_COLOR": "1",
        "TMPDIR": str(tmp_path),  # mktemp's folder
    }
    proc = subprocess.run(
        ["sh", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "Store times in UTC" in proc.stdout.rsplit("added ", 1)[1]  # the search found it


def test_the_python_api_example_runs_as_written(tmp_path):
    (code,) = blocks("python")
    lore.init(tmp_path).close()
    proc = subprocess.run(
        [sys.executable, "-P", "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "## Lore recall" in proc.stdout
