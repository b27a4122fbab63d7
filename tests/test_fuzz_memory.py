"""Fuzzing the memory format: files on disk, and what `add` writes.

Bounded (a few seconds per property) and derandomised, so the normal test run
is stable; bench/fuzz.py runs the same checks on 100,000+ inputs.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lore
from fuzzing import (
    KNOWN_OUTSIDE_SCOPE,
    add_inputs,
    any_memories,
    check_add,
    check_parse,
    check_round_trip,
    legal_memories,
    memory_file_bytes,
)

BOUNDED = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@pytest.mark.storage_independent  # the file format alone: no index
@settings(BOUNDED, max_examples=150)
@given(st.binary(max_size=2000))
def test_any_bytes_are_a_memory_or_one_validation_error(raw):
    assert check_parse(raw) is None


@pytest.mark.storage_independent  # the file format alone: no index
@settings(BOUNDED, max_examples=150)
@given(memory_file_bytes())
def test_hostile_memory_files_are_a_memory_or_one_validation_error(raw):
    assert check_parse(raw) is None


@pytest.mark.storage_independent  # the file format alone: no index
@settings(BOUNDED, max_examples=100)
@given(legal_memories)
def test_legal_memories_are_written_and_read_back_exactly(memory):
    assert check_round_trip(memory, strict=True) is None


@pytest.mark.storage_independent  # the file format alone: no index
@settings(BOUNDED, max_examples=100)
@given(any_memories())
def test_any_memory_is_written_exactly_or_refused_with_one_error(memory):
    assert check_round_trip(memory, strict=False) is None


def test_add_stores_exactly_what_it_was_given_and_nothing_else(tmp_path):
    project = lore.init(tmp_path / "proj")
    config = project.project.root / ".lore" / "config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    project.close()
    project = lore.open(tmp_path / "proj")

    @settings(BOUNDED, max_examples=120)
    @given(add_inputs())
    def add(kwargs):
        problem = check_add(project, kwargs)
        assert problem is None or problem in KNOWN_OUTSIDE_SCOPE, problem

    try:
        add()
    finally:
        project.close()
