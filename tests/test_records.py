"""`records.datarecord` behaves as `@dataclass` does: equality, repr, hashing."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lore.records import datarecord, internal

pytestmark = pytest.mark.storage_independent


def _pair():
    @datarecord
    class Shared:
        name: str
        score: float = 0.0
        tags: list = dataclasses.field(default_factory=list)
        note: str = internal(default="")
        skip: int = dataclasses.field(default=0, compare=False)

    @dataclasses.dataclass
    class Generated:
        name: str
        score: float = 0.0
        tags: list = dataclasses.field(default_factory=list)
        note: str = internal(default="")
        skip: int = dataclasses.field(default=0, compare=False)

    return Shared, Generated


values = st.tuples(
    st.text(max_size=5),
    st.floats(allow_nan=True),
    st.lists(st.integers(), max_size=3),
    st.text(max_size=3),
    st.integers(),
)


@given(values, values)
def test_equality_and_repr_are_dataclasses(a, b):
    shared, generated = _pair()
    assert (shared(*a) == shared(*b)) == (generated(*a) == generated(*b))
    assert (shared(*a) != shared(*b)) == (generated(*a) != generated(*b))
    assert repr(shared(*a)).replace("Shared", "X") == repr(generated(*a)).replace("Generated", "X")
    one = shared(*a)
    assert one == one  # the same object, NaN inside or not, as a tuple compares it


def test_unhashable_other_classes_unequal_own_methods_kept_and_recursion_shown():
    shared, generated = _pair()
    with pytest.raises(TypeError):
        hash(shared("a"))
    assert shared("a") != generated("a") and shared("a").__eq__(generated("a")) is NotImplemented

    @datarecord
    class Own:
        name: str

        def __eq__(self, other):
            return True

        def __repr__(self):
            return "own"

        __hash__ = None  # as an own __eq__ leaves it

    assert Own("a") == Own("b") and repr(Own("a")) == "own"
    loop = shared("loop")
    loop.tags.append(loop)
    assert repr(loop) == "_pair.<locals>.Shared(name='loop', score=0.0, tags=[...], skip=0)"
