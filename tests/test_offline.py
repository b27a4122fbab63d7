"""Nothing outside Lore's folders (issue 11): with HOME pointed at an empty
folder, a full run of init, index, search, recall and the MCP server writes
only into the project's `.lore/` and Lore's own cache folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def test_a_full_run_writes_only_into_lore_folders(tmp_path, git_env):
    home, tmp, root = tmp_path / "home", tmp_path / "tmp", tmp_path / "proj"
    for folder in (home, tmp, root):
        folder.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("LORE_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(HOME=str(home), TMPDIR=str(tmp), NO_COLOR="1")
    (root / "auth.py").write_text(
        "def refresh_token(session):\n    '''Refresh the OAuth token.'''\n    return 1\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "Add token refresh"], cwd=root, check=True, env=env)

    def lore(*args: str) -> None:
        proc = subprocess.run(
            [sys.executable, "-m", "lore", *args],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stderr

    lore("init")
    lore("add", "--title", "Tokens expire", "--body", "OAuth tokens expire after an hour; refresh early.")
    lore("index")
    lore("search", "token expiry")
    lore("code", "refresh token")
    lore("recall", "Fix the token refresh")

    async def mcp_round_trip() -> None:
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=sys.executable, args=["-m", "lore", "mcp"], cwd=str(root), env=env
        )
        with open(tmp_path / "mcp.err", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                with anyio.fail_after(120):
                    await s.initialize()
                    result = await s.call_tool("recall_context", {"title": "token refresh"})
                    assert not result.is_error

    anyio.run(mcp_round_trip)

    cache = home / ".cache" / "lore"
    outside = {
        p
        for p in files_under(tmp_path)
        if not (
            p.is_relative_to(root / ".lore")
            or p.is_relative_to(root / ".git")
            or p.is_relative_to(cache)
            or p == tmp_path / "mcp.err"
            or p.parent == root
        )
    }
    assert outside == set(), sorted(str(p) for p in outside)
    assert files_under(cache)  # the re-quantised model lives in Lore's cache, not elsewhere
