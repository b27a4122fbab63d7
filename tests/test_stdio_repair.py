"""The MCP stdio line repair: lone surrogate escapes become U+FFFD, and every request is answered."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_types import jsonrpc_message_adapter

from lore.interfaces.stdio_repair import answerable, bounded_lines, repair_lone_surrogates, top_level_members

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


@pytest.mark.parametrize("first", [True, False])
def test_a_request_nested_past_what_json_reads_is_answered(first):
    """20,000 levels deep json.loads raises RecursionError: the line passed
    through unanswered and the client waited forever."""
    deep = '{"a":' * 20_000 + "1" + "}" * 20_000
    members = '"jsonrpc":"2.0","id":"q7","method":"tools/call"'
    params = f'"params":{{"name":"x","arguments":{deep}}}'
    line = ("{" + (f"{members},{params}" if first else f"{params},{members}") + "}").encode()
    fixed = jsonrpc_message_adapter.validate_json(answerable(line), by_name=False)
    assert fixed.id == "q7" and fixed.method == "tools/call refused: its input can't be read"


def test_top_level_members_reads_only_the_top_level():
    line = b'{"x": [1, {"id": 2}], "id": "a\\"b", "method": "m", "y": {"method": "no"}, "z": true}'
    assert top_level_members(line) == {"id": 'a"b', "method": "m", "z": True}
    for other in (b"[1, 2]", b'"id"', b"", b'{"id":}', b"not json"):
        assert "id" not in top_level_members(other)


def test_a_line_over_the_limit_is_read_past_and_refused_for_its_size():
    def line(**request) -> bytes:
        return json.dumps(request).encode() + b"\n"

    big = {"name": "add_memory", "arguments": {"content": "a" * 5000}}
    source = io.BytesIO(
        line(jsonrpc="2.0", id=1, method="tools/call", params=big)  # the Python SDK's order
        + line(method="tools/call", params=big, jsonrpc="2.0", id="two")  # the TypeScript SDK's
        + line(method="notify", params=big)  # no id: nothing to answer
        + line(jsonrpc="2.0", id=4, method="ping")
        + line(method="tools/call", params=big, jsonrpc="2.0", id=5).rstrip(b"\n")  # the end of input
    )
    out = list(bounded_lines(source, limit=1000))
    replies = [jsonrpc_message_adapter.validate_json(o, by_name=False) for o in out if o]
    assert [r.id for r in replies] == [1, "two", 4, 5] and len(out) == 5
    assert replies[0].method.startswith("tools/call refused: the request is over")
    assert replies[2].method == "ping"
