"""Attention tiers (seed 001): the transitions at each threshold, kept state, the 90-day archive."""

from __future__ import annotations

import pytest

from lore.memory.lifecycle import tiers
from lore.memory.lifecycle.clock import parse
from lore.storage import TierState

from .conftest import at

HALF_LIFE = 90.0


def decide(state, *, day=0.0, access=0, evidence=1, confidence=1.0, reinforced=0.0, superseded=False):
    signals = tiers.Signals(access, evidence, confidence, at(reinforced), superseded=superseded)
    return tiers.decide(state, signals, parse(at(day)), HALF_LIFE, "m1")


def state(tier: str, since: float = 0.0, low: float | None = None) -> TierState:
    return TierState("m1", tier, at(since), at(low) if low is not None else None, at(since))


# -- promotions: exactly 001's thresholds ------------------------------------------------------


def test_a_new_memory_starts_cold_even_when_fully_confident():
    assert decide(None).tier == "cold"


@pytest.mark.parametrize(("access", "expected"), [(0, "cold"), (2, "cold"), (3, "warm"), (7, "warm")])
def test_cold_to_warm_at_three_accesses(access, expected):
    assert decide(state("cold"), access=access).tier == expected


@pytest.mark.parametrize(("evidence", "expected"), [(1, "cold"), (2, "warm"), (4, "warm")])
def test_cold_to_warm_at_two_pieces_of_evidence(evidence, expected):
    assert decide(state("cold"), evidence=evidence, confidence=0.5).tier == expected


@pytest.mark.parametrize(
    ("confidence", "evidence", "expected"),
    [(0.95, 4, "warm"), (0.7, 5, "warm"), (0.71, 5, "hot"), (0.9, 9, "hot")],
)
def test_warm_to_hot_needs_confidence_above_0_7_and_five_pieces_of_evidence(confidence, evidence, expected):
    assert decide(state("warm"), evidence=evidence, confidence=confidence).tier == expected


def test_one_read_never_moves_a_memory_from_cold_to_hot():
    """The old read-time tiers put a fresh, confident memory in HOT after one read."""
    after_one_read = decide(state("cold"), access=1, confidence=1.0)
    assert after_one_read.tier == "cold"
    assert tiers.score(tiers.Signals(1, 1, 1.0, at(0)), parse(at(0)), HALF_LIFE) > tiers.HOT_BAND


# -- decay ---------------------------------------------------------------------------------------


def test_hot_decays_to_warm_then_cold_when_not_read():
    hot = state("hot")
    kept = decide(hot, day=40, evidence=6)
    assert kept.tier == "hot" and kept.since == hot.since  # score 0.735: still in the band
    warm = decide(hot, day=50, evidence=6)  # 0.68
    assert warm.tier == "warm" and warm.since == at(50)
    assert decide(warm, day=160, evidence=6).tier == "cold"  # 0.29


def test_a_read_keeps_a_memory_hot():
    assert decide(state("hot"), day=200, evidence=6, access=4, reinforced=199).tier == "hot"


# -- the archive ----------------------------------------------------------------------------------


def test_archive_after_the_score_stays_below_0_1_for_90_days():
    cold = decide(state("cold"), day=200)
    assert cold.tier == "cold" and cold.low_since is None  # score 0.21
    low = decide(cold, day=310)  # 0.09: first seen below the line
    assert low.tier == "cold" and low.low_since == at(310)
    almost = decide(low, day=399)
    assert almost.tier == "cold" and almost.low_since == at(310)
    archived = decide(almost, day=400)
    assert archived.tier == "archive" and archived.since == at(400)
    assert decide(archived, day=500).tier == "archive"  # it stays


def test_an_old_memory_seen_for_the_first_time_gets_its_90_days():
    first = decide(None, day=1000)
    assert first.tier == "cold" and first.low_since == at(1000)
    assert decide(first, day=1089).tier == "cold"
    assert decide(first, day=1090).tier == "archive"


def test_a_read_brings_an_archived_memory_back():
    archived = state("archive", since=400, low=310)
    back = decide(archived, day=401, access=1, reinforced=401)
    assert back.tier == "cold" and back.low_since is None
    assert decide(archived, day=401, access=3, reinforced=401).tier == "warm"


def test_a_tier_decided_by_a_clock_ahead_is_decided_again():
    # A clock a year ahead (a wrong system clock, LORE_NOW) archived a memory; back at
    # the right time no read was later than that archive, so it stayed archived, out of
    # search and list, until the wrong date came round.
    ahead = decide(decide(None, day=400), day=500)
    assert ahead.tier == "archive"
    back = decide(ahead, day=10, reinforced=10)
    assert back.tier == "cold" and back.since == at(10) and back.low_since is None
    assert decide(ahead, day=10, access=3, reinforced=10).tier == "warm"
    assert decide(back, day=11).tier == "cold"  # and kept from then on


def test_a_superseded_memory_is_archived_for_good():
    assert decide(state("hot"), evidence=9, access=9, superseded=True).tier == "archive"


# -- through the service: state kept in the index, a clock the test moves -------------------------


def test_reads_move_a_memory_one_tier_at_a_time_and_the_state_is_kept(proj, clock):
    m = proj.add(title="Use UTC everywhere", body="Store every timestamp in UTC.", occurred_at=at(0))
    assert [r["tier"] for r in proj.list()] == ["cold"]
    for day in (1, 2):
        clock.set(day)
        proj.show(m.id)
        assert proj.list()[0]["tier"] == "cold", f"after {day} reads"
    clock.set(3)
    proj.show(m.id)
    assert proj.list()[0]["tier"] == "warm"
    assert [r["id"] for r in proj.list(tier="warm")] == [m.id]
    assert proj.list(tier="hot") == []
    kept = proj.store.tier_states([m.id])[m.id]
    assert (kept.tier, kept.since) == ("warm", at(3))
    # Not recomputed from scratch: a later pass keeps the time it entered the tier.
    clock.set(3.5)
    proj.lifecycle.advance()
    assert proj.store.tier_states([m.id])[m.id].since == at(3)


def test_the_90_day_archive_end_to_end(proj, clock, cli_in):
    m = proj.add(
        title="Nightly export runs at 2am",
        body="The orders export runs nightly at 2am UTC.",
        occurred_at=at(0),
    )
    other = proj.add(title="Orders table", body="Orders live in the orders table.", occurred_at=at(0))
    for day in (200, 310, 399):
        clock.set(day)
        assert {r["id"] for r in proj.list()} == {m.id, other.id}, f"day {day}"
    clock.set(395)
    proj.show(other.id)  # read: `other` stays out of the archive
    clock.set(400)
    assert [r["id"] for r in proj.list()] == [other.id]
    archived = proj.list(include_archived=True)
    assert {r["id"]: r["tier"] for r in archived}[m.id] == "archive"
    assert [r["id"] for r in proj.list(tier="archive")] == [m.id]
    assert m.id not in [h.id for h in proj.search("nightly export 2am")]
    assert m.id in [h.id for h in proj.search("nightly export 2am", include_archived=True)]
    pack = proj.recall("nightly orders export", include_code=False, include_related_work=False)
    assert m.id not in [item.key for item in pack.items]
    # The same through the CLI.
    out = cli_in(proj.project.root, "search", "nightly export", "--json")
    assert m.id not in [h["id"] for h in out]
    out = cli_in(proj.project.root, "search", "nightly export", "--include-archived", "--json")
    assert m.id in [h["id"] for h in out]
    # Reading it brings it back.
    clock.set(401)
    proj.show(m.id)
    assert m.id in {r["id"] for r in proj.list()}


def test_a_clock_that_ran_ahead_archives_nothing_once_it_is_right_again(proj, clock):
    m = proj.add(title="Deploys go through staging", body="Every deploy spends an hour on staging.")
    clock.set(5 * 365)  # a clock five years ahead, for two reads (or LORE_NOW)
    proj.list()
    clock.set(5 * 365 + 100)
    assert proj.list() == [] and proj.list(tier="archive")[0]["id"] == m.id
    clock.set(1)  # right again
    assert [r["id"] for r in proj.list()] == [m.id]
    assert m.id in [h.id for h in proj.search("staging deploys")]


@pytest.mark.parametrize(
    "when", ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00"]
)
def test_a_lore_now_no_date_arithmetic_can_use_is_refused_in_one_line(cli, when):
    """LORE_NOW in year 1 passed the ISO check, then `lore session start` (whose
    consolidation looks two days back) and `lore list` died with an internal
    OverflowError; now it is refused like an unreadable LORE_NOW."""
    for args in (("session", "start"), ("list",)):
        result = cli(*args, ok=False, env={"LORE_NOW": when})
        assert result.returncode == 2, (args, result.stderr)
        assert "LORE_NOW" in result.stderr and "internal error" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert not (cli.cwd / ".lore" / "sessions").exists() or not any(
        (cli.cwd / ".lore" / "sessions").iterdir()
    )


def test_the_reads_of_a_few_memories_read_only_their_own_statistics(proj, clock, monkeypatch):
    """A recall records access for the memories it shows; the tier pass that
    follows reads those memories' statistics, not every memory's (that grew
    with the project's age), and decides the same tiers."""
    for i in range(3):
        proj.lifecycle.remember(
            body=f"Body of note {i}.",
            title=f"Note {i}",
            type="lesson",
            key=f"n{i}",
            source="t",
            occurred_at=at(i),
        )
    ids = [r["id"] for r in sorted(proj.list(), key=lambda r: r["title"])]
    everything = proj.store.last_evidence()
    assert set(everything) == set(ids)
    assert proj.store.last_evidence([ids[0], ids[2]]) == {i: everything[i] for i in (ids[0], ids[2])}
    assert proj.store.last_evidence([]) == {} and proj.store.access_stats([]) == {}
    store_type = type(proj.store)
    for name in ("access_stats", "last_evidence"):
        every = getattr(store_type, name)

        def only_some(self, memory_ids=None, _every=every, _name=name):
            assert memory_ids is not None, f"{_name} of every memory read for a few"
            return _every(self, memory_ids)

        monkeypatch.setattr(store_type, name, only_some)
    for day in (1, 2, 3):
        clock.set(day)
        proj.show(ids[0])
    assert proj.store.access_stats([ids[0], ids[1]]) == {ids[0]: (3, at(3))}
    assert proj.lifecycle.tiers_of(ids) == {ids[0]: "warm", ids[1]: "cold", ids[2]: "cold"}
