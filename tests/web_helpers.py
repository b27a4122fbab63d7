"""Shared set-up for the web tests: real projects in temp dirs (git repos), the
real ASGI app driven in process through httpx, and a real `lore serve`
subprocess for the browser tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import asynccontextmanager
from pathlib import Path

TOKEN = "s3cret-token-for-tests-0123456789"
# The first message an MCP client sends over streamable HTTP.
MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
_CLEAN_ENV = ("LORE_PROJECT", "LORE_TOKEN", "LORE_AGENT", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")


GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Ada Tester",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Tester",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}


def git(root: Path, *args: str) -> str:
    """Run git in `root`, isolated from the user's configuration."""
    env = {k: v for k, v in os.environ.items() if k not in _CLEAN_ENV} | GIT_ENV
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True, env=env
    ).stdout


def make_project(root: Path, *, files: dict[str, str] | None = None) -> Path:
    """A git repo with a Lore project (BM25 only: no model load) and a first commit."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    import lore

    lore.init(root).close()
    config = root / ".lore" / "config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


def add_memory(
    root: Path, title: str, body: str, *, tags=("demo",), type="fact", agent=None, private=False
) -> str:
    import lore

    with lore.open(root, agent=agent) as project:
        return project.add(title=title, body=body, tags=list(tags), type=type, private=private).memory.id


@asynccontextmanager
async def client(
    app, *, host: str = "127.0.0.1:8766", headers: dict | None = None, client_ip: str = "127.0.0.1"
):
    """An httpx client talking to the app in process, with its lifespan running."""
    import httpx

    async with app.app.router.lifespan_context(app.app):
        transport = httpx.ASGITransport(app=app, client=(client_ip, 50000))
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}", headers=headers) as c:
            yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`python -m lore serve` in a subprocess, stopped on exit."""

    def __init__(
        self,
        root: Path,
        *args: str,
        host: str = "127.0.0.1",
        port: int | None = None,
        env: dict | None = None,
    ):
        self.port = port or free_port()
        self.host = host
        full_env = {k: v for k, v in os.environ.items() if k not in _CLEAN_ENV}
        full_env.update(NO_COLOR="1", **(env or {}))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lore", "serve", "--host", host, "--port", str(self.port), *args],
            cwd=root,
            env=full_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        self._wait()

    def _wait(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"lore serve exited {self.proc.returncode}: {self.proc.stderr.read()}")
            try:
                urllib.request.urlopen(f"{self.url}/static/app.css", timeout=1).read()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError("lore serve did not start in time")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()


CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parent.parent / "docs" / "screenshots"


def launch_browser(playwright):
    """Debian's chromium under playwright (never `playwright install`)."""
    return playwright.chromium.launch(
        executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    )


def screenshot(page, name: str) -> None:
    """Refresh docs/screenshots/<name>.png when LORE_SCREENSHOTS=1."""
    if os.environ.get("LORE_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
