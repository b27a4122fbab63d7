"""The MCP stdio line repair: lone surrogate escapes become U+FFFD, nothing else changes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_types import jsonrpc_message_adapter

from lore.interfaces.stdio_repair import answerable, repair_lone_surrogates

pytestmark = pytest.mark.storage_independent

# Any code point, lone surrogates included, and the backslashes and "u" that
# make escapes look alike.
texts = st.text(
    alphabet=st.one_of(st.characters(), st.sampled_from(["\\", "u", "\ud83d", "\ude00", "\udc00"]))
)


def _expected(text: str) -> str:
    """`text` with every unpaired surrogate replaced, as a decoder would."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


@given(texts)
def test_a_line_becomes_the_text_with_lone_surrogates_replaced(text):
    line = json.dumps({"q": text}).encode() + b"\n"
    repaired = repair_lone_surrogates(line)
    assert json.loads(repaired)["q"] == _expected(text)
    if _expected(text) == text:
        assert repaired == line  # nothing to repair: the very same bytes


@given(texts)
def test_the_sdks_parser_takes_every_repaired_line(text):
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"q": text}})
    message = jsonrpc_message_adapter.validate_json(repair_lone_surrogates(line.encode()), by_name=False)
    assert message.params["q"] == _expected(text)


def test_escaped_backslashes_pairs_and_raw_text_are_left_alone():
    for line in (
        rb'{"q": "\\ud83d"}',  # an escaped backslash, then the text "ud83d"
        rb'{"q": "\\\\ud83d"}',
        rb'{"q": "\ud83d\ude00"}',  # a pair: one emoji
        rb'{"q": "\\\ud83d\ude00"}',  # a backslash, then the pair
        b'{"q": "plain"}',
        '{"q": "😀"}'.encode(),
    ):
        assert repair_lone_surrogates(line) == line
    assert repair_lone_surrogates(rb'"\\\ud83d"') == rb'"\\\ufffd"'
    assert repair_lone_surrogates(rb'"\uDC00\uD800\uD800\uDC00"') == rb'"\ufffd\ufffd\uD800\uDC00"'


def test_a_line_the_sdk_reads_passes_unchanged_and_a_request_it_cannot_gets_an_answerable_one():
    good = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n'
    assert answerable(good) == good
    for line in (b"not json\n", b'{"jsonrpc": "2.0", "method": "notify", "params": 3}\n', b"[1, 2]\n"):
        assert answerable(line) == line  # nothing to answer: no request id
    for request_id in (7, "seven"):
        bad = json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": "str"}
        ).encode()
        fixed = jsonrpc_message_adapter.validate_json(answerable(bad), by_name=False)
        assert fixed.id == request_id and fixed.method == "tools/call refused: params must be a JSON object"
