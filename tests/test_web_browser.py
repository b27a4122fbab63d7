"""The web UI in a real browser: Debian's chromium driven by playwright against
a real `lore serve` subprocess on a temp git project (one server for the module).

`LORE_SCREENSHOTS=1` refreshes docs/screenshots/ from these pages.
"""

from __future__ import annotations

import os
import re

import pytest

from web_helpers import CHROMIUM, Server, add_memory, launch_browser, make_project, screenshot

pytestmark = [
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM),
        reason="needs Debian's chromium: apt-get install chromium (.ci/run does)",
    ),
    pytest.mark.surface,  # the pages; the API under them runs on PostgreSQL in test_web_api.py
]
N_CODE_FILES = 1500


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    files = {
        f"pkg/mod{i:04d}.py": f'"""Module {i}."""\n\n\ndef handler_{i}(request):\n    """Handle request {i}."""\n    return request.get("value_{i}")\n'
        for i in range(N_CODE_FILES)
    }
    root = make_project(tmp_path_factory.mktemp("web") / "proj", files=files)
    for i in range(3):
        add_memory(
            root,
            f"Flaky test {i}",
            f"Test number {i} fails on CI when the runner is slow.",
            tags=["flaky", "ci"],
        )
    add_memory(
        root,
        "Use UTC everywhere",
        "Store every timestamp in UTC; convert in the UI only.",
        tags=["time"],
        type="convention",
    )
    add_memory(
        root,
        "Cache invalidation lesson",
        "Invalidate the user cache on profile writes.",
        tags=["cache"],
        type="lesson",
    )
    add_memory(
        root,
        "Retry with backoff",
        "Retry network calls three times with exponential backoff.",
        tags=["network"],
        type="pattern",
    )
    return root


@pytest.fixture(scope="module")
def server(root):
    srv = Server(root)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(base_url=server.url, viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def memory_file(root, title: str):
    return next(p for p in (root / ".lore").rglob("*.md") if f"subject: {title}" in p.read_text())


def test_list_and_filter(page, root):
    page.goto("/memories")
    assert page.locator("table.memories tbody tr").count() == 6
    screenshot(page, "memories")
    page.select_option("select[name=type]", "lesson")
    page.click("button:text-is('Filter')")
    page.wait_for_url(re.compile(r"type=lesson"))
    rows = page.locator("table.memories tbody tr")
    assert rows.count() == 1 and "Cache invalidation lesson" in rows.inner_text()
    page.goto("/memories?tag=flaky")
    assert page.locator("table.memories tbody tr").count() == 3
    page.click("thead >> text=Title")  # sort by title, descending first
    page.wait_for_url(re.compile(r"sort=title"))
    titles = page.locator("table.memories tbody td:nth-child(2) a").all_inner_texts()
    assert titles == sorted(titles, reverse=True) and len(titles) == 3
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/memories")
    screenshot(page, "memories-phone")
    assert page.locator("table.memories tbody tr").count() == 6


def test_search_with_the_keyboard(page):
    page.goto("/memories")
    page.keyboard.press("/")
    page.keyboard.type("exponential backoff")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/search\?q=exponential"))
    first = page.locator("ol.results li").first
    assert "Retry with backoff" in first.inner_text()
    screenshot(page, "search")
    first.locator("a").first.click()
    assert page.locator("h1").inner_text() == "Retry with backoff"


def test_create_with_preview(page, root):
    page.goto("/memories")
    page.keyboard.press("n")
    page.wait_for_url(re.compile(r"/memories/new"))
    page.fill("input[name=title]", "Deploys happen on Tuesdays")
    page.select_option("select[name=type]", "convention")
    page.fill("input[name=tags]", "deploy, process")
    page.fill(
        "textarea[name=body]", "# Deploy day\n\nWe deploy on **Tuesdays** only. <script>alert(1)</script>"
    )
    page.wait_for_selector("[data-preview-target] strong:text('Tuesdays')")
    assert page.locator("[data-preview-target] script").count() == 0
    screenshot(page, "new-memory")
    page.locator("textarea[name=body]").press("Control+Enter")
    page.wait_for_url(re.compile(r"/memories/[0-9a-f-]+\?saved=1"))
    assert page.locator("h1").inner_text() == "Deploys happen on Tuesdays"
    assert page.locator(".body strong").inner_text() == "Tuesdays"
    text = memory_file(root, "Deploys happen on Tuesdays").read_text()
    assert "type: convention" in text and "We deploy on **Tuesdays** only." in text


def test_creating_what_is_stored_already_says_nothing_was_written(page):
    """The form said "Saved, indexed and embedded." and showed the old memory,
    its new title, scope and tags dropped without a word."""
    page.goto("/memories/new")
    page.fill("input[name=title]", "A second title for the cache lesson")
    page.fill("textarea[name=body]", "Invalidate the user cache on profile writes.")
    page.click("button:text('Save')")
    page.wait_for_url(re.compile(r"/memories/[0-9a-f-]+\?existing=1"))
    status = page.locator("p.alert[role=status]").inner_text()
    assert "already stored" in status and "nothing was written" in status
    assert page.locator("h1").inner_text() == "Cache invalidation lesson"


def test_edit_changes_the_file_and_search_finds_it(page, root):
    page.goto("/search?q=timestamp+UTC")
    page.locator("ol.results a", has_text="Use UTC everywhere").click()
    page.wait_for_load_state("domcontentloaded")  # the keyboard shortcuts are in a deferred script
    screenshot(page, "memory")
    page.keyboard.press("e")
    page.wait_for_url(re.compile(r"/edit$"))
    page.fill(
        "textarea[name=body]", "Store every timestamp in UTC. The zanzibar service is the only exception."
    )
    page.click("button:text('Save')")
    page.wait_for_url(re.compile(r"saved=1"))
    assert "zanzibar" in memory_file(root, "Use UTC everywhere").read_text()
    page.goto("/search?q=zanzibar")
    assert "Use UTC everywhere" in page.locator("ol.results").inner_text()


def test_conflicting_edit_is_shown_not_overwritten(page, root):
    page.goto("/search?q=cache+invalidation")
    page.locator("ol.results a", has_text="Cache invalidation lesson").click()
    page.click("text=Edit")
    path = memory_file(root, "Cache invalidation lesson")
    path.write_text(path.read_text().replace("profile writes", "profile writes and avatar uploads"))
    page.fill("textarea[name=body]", "Invalidate the cache on every write (browser edit).")
    page.click("button:text('Save')")
    page.wait_for_selector("#conflict")
    assert "avatar uploads" in path.read_text() and "browser edit" not in path.read_text()
    assert page.input_value("textarea[name=body]") == "Invalidate the cache on every write (browser edit)."
    assert "avatar uploads" in page.locator(".disk pre").inner_text()
    screenshot(page, "edit-conflict")
    page.click("button:text('Save anyway')")
    page.wait_for_url(re.compile(r"saved=1"))
    assert "browser edit" in path.read_text()


def test_soft_delete_and_restore(page, root):
    page.goto("/search?q=exponential+backoff")
    page.locator("ol.results a", has_text="Retry with backoff").click()
    path = memory_file(root, "Retry with backoff")
    page.click("button:text('Delete')")
    page.wait_for_url(re.compile(r"trashed="))
    assert not path.exists()
    assert page.locator("table.memories", has_text="Retry with backoff").count() == 0
    page.goto("/trash")
    assert (
        "Retry with backoff" in page.locator("table").inner_text()
        or path.name in page.locator("table").inner_text()
    )
    page.go_back()
    page.click("button:text('Undo')")
    page.wait_for_url(re.compile(r"restored=1"))
    assert page.locator("h1").inner_text() == "Retry with backoff" and path.exists()


def test_bulk_delete_by_tag_with_preview(page, root):
    page.goto("/memories?tag=flaky")
    page.select_option("select[name=action]", "delete")
    page.click("button:text('Preview…')")
    page.wait_for_selector("#confirm")
    assert page.locator("h1").inner_text() == "Preview: delete 3 memories"
    assert len(list((root / ".lore/memory").glob("*flaky*"))) == 3  # nothing changed yet
    screenshot(page, "bulk-preview")
    page.click("#confirm")
    page.wait_for_selector("text=3 of 3 memories changed")
    assert list((root / ".lore/memory").glob("*flaky*")) == []
    page.click("text=Back to the memories")
    assert page.locator("td.empty").count() == 1


def test_dashboard_during_a_running_index_update(page, root):
    page.goto("/index")
    page.click("#update-index")
    page.wait_for_selector("#job[data-job-id]")
    seen_running = page.locator("[data-job-state]").inner_text()
    screenshot(page, "index-running")
    # Live progress (server-sent events) until the run ends and the page reloads.
    page.wait_for_selector("#job:not([data-job-id])", state="attached", timeout=120_000)
    assert seen_running in ("queued", "running")
    code = page.locator("tr[data-source=code]").inner_text()
    assert f"{N_CODE_FILES:,}" in code
    assert page.locator("table", has_text="update").locator("td", has_text="done").count() >= 1
    screenshot(page, "index")
