"""The offline summariser keeps decisions, errors with their fixes, corrections, files and
what is open; sectioned and bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.sessions import message, tool_call, tool_result
from lore.sessions.events import normalise
from lore.sessions.extractive import MAX_ITEMS, summarize_extractive

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip

ROOT = Path("/home/ada/shop")


def numbered(events: list[dict]) -> list[dict]:
    return [{"id": i, **normalise(e)} for i, e in enumerate(events, 1)]


SESSION = numbered(
    [
        message("user", "The checkout tests fail on CI. Can you look at tests/test_checkout.py?"),
        tool_call("Read", {"file_path": "/home/ada/shop/tests/test_checkout.py"}),
        tool_result("tc_2", "def test_total():\n    assert total([]) == 0\n"),
        tool_call("Bash", {"command": "pytest tests/test_checkout.py -x"}),
        tool_result(
            "tc_4",
            'Traceback (most recent call last):\n  File "shop/cart.py", line 12, in total\n'
            "    return sum(i.price for i in items) / len(items)\nZeroDivisionError: division by zero\n"
            "FAILED tests/test_checkout.py::test_total",
            is_error=True,
        ),
        message(
            "assistant",
            "The problem was that total() divides by the item count, which is zero for an empty cart. "
            "I will guard the empty case in shop/cart.py.",
        ),
        message("user", "No, don't special-case it in total(). Use the Cart.is_empty property instead."),
        tool_call("Edit", {"file_path": "/home/ada/shop/shop/cart.py", "old_string": "x", "new_string": "y"}),
        tool_result("tc_8", "The file /home/ada/shop/shop/cart.py has been updated."),
        message("assistant", "I updated shop/cart.py to return 0 early when Cart.is_empty is true."),
        tool_call("Bash", {"command": "pytest tests/test_checkout.py -x"}),
        tool_result("tc_11", "3 passed in 0.21s"),
        message("assistant", "Fixed: all tests pass now."),
        message("user", "Great. We decided to use Decimal for money from now on, not float."),
        message(
            "assistant", "Noted. We still need to migrate the invoice module to Decimal; that is a follow-up."
        ),
    ]
)


def sections(body: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in body.split("\n## ")[1:]:
        title, _, text = part.partition("\n")
        out[title.strip()] = text.strip()
    return out


def test_keeps_decisions_errors_with_fixes_corrections_files_and_open_items():
    summary = summarize_extractive(SESSION, session_id="s1", root=ROOT)
    body = summary.body
    assert body.startswith("Session s1, events 1-15 (")
    parts = sections(body)
    assert list(parts) == ["Decided", "Done", "Learned", "Errors and fixes", "Corrections", "Files", "Open"]

    assert "We decided to use Decimal for money from now on, not float. [e14]" in parts["Decided"]
    assert "I updated shop/cart.py to return 0 early when Cart.is_empty is true. [e10]" in parts["Done"]
    assert "The problem was that total() divides by the item count" in parts["Learned"]
    errors = parts["Errors and fixes"]
    assert "ZeroDivisionError: division by zero" in errors and "Fixed: all tests pass now." in errors
    assert "[e5→e13]" in errors  # the error's event and the fix's event
    assert (
        "user: No, don't special-case it in total(). Use the Cart.is_empty property instead. [e7]"
        in (parts["Corrections"])
    )
    files = parts["Files"]
    assert "`shop/cart.py` (edited)" in files  # made relative to the project root
    assert "`tests/test_checkout.py`" in files
    assert "/home/ada" not in files
    assert "We still need to migrate the invoice module to Decimal" in parts["Open"]
    assert "decimal" in summary.keywords and summary.summarizer == "extractive"


def test_an_error_never_fixed_is_open():
    events = numbered(
        [
            tool_call("Bash", {"command": "npm run build"}),
            tool_result("tc_1", "npm ERR! missing script: build", is_error=True),
            message("assistant", "The build script is missing from package.json."),
        ]
    )
    parts = sections(summarize_extractive(events, session_id="s2").body)
    assert "Errors and fixes" not in parts
    assert "unresolved: `npm ERR! missing script: build [e2]`" in parts["Open"]


def test_an_error_seen_early_and_again_just_before_its_fix_is_fixed_not_open():
    failure = "AttributeError: module 'click' has no attribute 'get_eta'"
    events = numbered(
        [
            tool_call("Bash", {"command": "python -c 'import click; click.get_eta()'"}),
            tool_result("tc_1", failure, is_error=True),
            *[tool_result(f"tc_r{n}", f"file {n}: nothing wrong here") for n in range(50)],
            tool_result("tc_2", failure, is_error=True),
            message("assistant", "Fixed: get_eta is exported from click/__init__.py now."),
        ]
    )
    parts = sections(summarize_extractive(events, session_id="s2").body)
    assert "Open" not in parts, "fixed right after its latest occurrence"
    assert parts["Errors and fixes"] == (
        f"- `{failure}` (2×) → Fixed: get_eta is exported from click/__init__.py now. [e53→e54]"
    )


def test_code_a_tool_showed_is_not_an_open_error():
    events = numbered(
        [
            tool_call("Read", {"file_path": "/home/ada/shop/shop/cart.py"}, call_id="tc_1"),
            tool_result(
                "tc_1", "    12\u2192        raise RuntimeError(\n    13\u2192except ValueError: pass"
            ),
            message("assistant", "The cart raises when it is empty."),
        ]
    )
    parts = sections(summarize_extractive(events, session_id="s4", root=ROOT).body)
    assert "Errors and fixes" not in parts and "Open" not in parts, parts


def test_sections_are_bounded_and_chit_chat_has_none():
    chatty = numbered(
        [
            message("user" if i % 2 else "assistant", f"We decided to use option {i} for the widget.")
            for i in range(60)
        ]
    )
    summary = summarize_extractive(chatty, session_id="s3")
    decided = sections(summary.body)["Decided"].splitlines()
    assert len(decided) == MAX_ITEMS and decided[-1].endswith("[e60]")  # the latest decisions
    assert len(summary.body) < 4000

    small_talk = numbered(
        [message("user", "Hey! How was the weekend?"), message("assistant", "Lovely, thanks.")]
    )
    body = summarize_extractive(small_talk, session_id="s4").body
    assert "## " not in body and body.startswith(
        "Session s4, events 1-2 (1 user messages, 1 assistant messages)"
    )
