"""Logging in and CSRF with the server off loopback: `lore serve --host 0.0.0.0`
with a token, reached through 127.0.0.1 (traffic stays on this machine), in
Debian's chromium driven by playwright."""

from __future__ import annotations

import os
import re

import pytest

from web_helpers import CHROMIUM, TOKEN, Server, add_memory, launch_browser, make_project, screenshot

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM), reason="needs Debian's chromium: apt-get install chromium (.ci/run does)"
)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = make_project(tmp_path_factory.mktemp("login") / "proj")
    add_memory(root, "Login test memory", "A memory behind the login form.", tags=["login"])
    return root


@pytest.fixture(scope="module")
def server(root):
    srv = Server(root, host="0.0.0.0", env={"LORE_TOKEN": TOKEN})
    yield srv
    srv.stop()


def test_exposed_server_refuses_to_start_without_a_token(root):
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "lore", "serve", "--host", "0.0.0.0", "--port", "1"],
        cwd=root,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "LORE_TOKEN"},
        timeout=60,
    )
    assert proc.returncode == 2 and "token" in proc.stderr and "Traceback" not in proc.stderr
    assert "LORE_TOKEN" in proc.stderr and "'0.0.0.0'" in proc.stderr


def test_login_then_csrf_protected_forms(server, root):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        context = browser.new_context(base_url=server.url)
        page = context.new_page()
        page.set_default_timeout(15_000)

        page.goto("/memories")
        page.wait_for_url(re.compile(r"/login\?next=/memories"))
        page.fill("input[name=token]", "not-the-token")
        page.click("button:text('Log in')")
        assert "wrong token" in page.locator(".alert").inner_text()
        screenshot(page, "login")
        page.fill("input[name=token]", TOKEN)
        page.click("button:text('Log in')")
        page.wait_for_url(re.compile(r"/memories$"))
        assert "Login test memory" in page.locator("table.memories").inner_text()

        session = next(c for c in context.cookies() if c["name"] == "lore_session")
        assert session["httpOnly"] and session["sameSite"] == "Strict"

        key = page.locator("table.memories tbody a").first.get_attribute("href").rsplit("/", 1)[1]
        # A forged form post (no CSRF token) carries the session cookie but is refused.
        forged = context.request.post(f"/memories/{key}/delete", form={"confirm": "1"})
        assert forged.status == 403
        cross_site = context.request.post(
            f"/memories/{key}/delete", form={"csrf_token": "x"}, headers={"Origin": "http://evil.example"}
        )
        assert cross_site.status == 403
        assert context.request.get(f"/api/memories/{key}").status == 200  # still there
        # The page's own form carries the token and works.
        page.goto(f"/memories/{key}")
        page.click("button:text('Delete')")
        page.wait_for_url(re.compile(r"trashed="))
        assert context.request.get(f"/api/memories/{key}").status == 404
        # The API takes the bearer token; a browser session without the header is not enough for MCP.
        anonymous = playwright.request.new_context(base_url=server.url)
        assert anonymous.get("/api/memories").status == 401
        assert anonymous.get("/api/memories", headers={"Authorization": f"Bearer {TOKEN}"}).status == 200
        anonymous.dispose()
        page.click("button:text('Log out')")
        page.wait_for_url(re.compile(r"/login"))
        page.goto("/memories")
        page.wait_for_url(re.compile(r"/login"))
        browser.close()
