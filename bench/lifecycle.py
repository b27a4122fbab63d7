"""Issue 13 lifecycle benchmark: LoCoMo questions answerable through Lore's real search,
before and after the long transcript is compacted.

    python bench/lifecycle.py [--small 4000,8000,1000] [--modes bm25,hybrid] [--limit N]

The transcript is bench/sessions.py's: LoCoMo's 10 conversations, 5,882 turns,
appended in order to ONE recorded session (one message per turn).

- **before** compaction: every turn is searchable (each written as a
  session-tier memory, as a capture would keep it); a question is
  answerable when one of its evidence turns (qrels_turns.jsonl) is in the
  top 10 of ``Lore.search`` (``lore search``).
- **after** compaction (limits ``--small``, so most of the session is
  summarised and archived; recorded through ``Lore.record_events``, so each
  compaction's events also go to 001's capture: the digest's daily memories
  are searchable too and compete for the top 10): the summaries are indexed by Lore itself
  (``.lore/sessions/<id>/summaries/``, storage ``session-summary``) and the
  turns still in the live view stay searchable as turns; a question is
  answerable when an evidence turn still live is in the top 10, or the
  summary of the archived range holding it is. Measured twice: with
  ``lore search`` (summaries and live turns together) and with ``lore
  session search`` (summaries only).

A control line gives how often the right summary lands in the top 10 for a
question taken from another conversation (chance level of the summary
criterion). A summary covers a whole range, so "found by its summary" is
range-level retrieval; "answer in the summary" counts the questions whose
answer text is verbatim in the summary found.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

from _common import BENCH_DATA, jsonl, row
from sessions import fresh_project, locomo_turns

LOCOMO = BENCH_DATA / "locomo"
TOP = 10


def turn_memory_id(turn: str) -> str:
    digest = hashlib.sha256(f"locomo-turn:{turn}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def write_turns(root: Path, items: list[dict]) -> dict[str, str]:
    """Each turn as a session-tier memory file (written directly: one sync indexes them all)."""
    from lore.memory import markdown
    from lore.memory.model import Memory

    folder = root / ".lore/local/session"
    folder.mkdir(parents=True, exist_ok=True)
    ids = {}
    for item in items:
        event = item["event"]
        memory = Memory(
            title=event["content"][:80],
            body=event["content"] + "\n",
            type="summary",
            tags=["locomo"],
            occurred_at=event["timestamp"],
            id=turn_memory_id(item["turn"]),
            source=f"locomo:{item['turn']}",
        )
        (folder / f"{item['turn'].replace(':', '-')}.md").write_text(markdown.render(memory))
        ids[memory.id] = item["turn"]
    return ids


def index(root: Path, mode: str) -> tuple[float, float]:
    """Sync (and embed, for hybrid): seconds for each."""
    import lore

    with lore.open(root) as p:
        started = time.perf_counter()
        p.sync()
        synced = time.perf_counter() - started
        started = time.perf_counter()
        if mode == "hybrid":
            p.embed()
        return synced, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", default="4000,8000,1000", help="soft,hard,protected limits for compaction")
    parser.add_argument("--modes", default="bm25,hybrid", help="search modes to measure")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions (quick runs)")
    args = parser.parse_args()
    import lore

    turns = locomo_turns()
    queries = {q["qid"]: q for q in jsonl(LOCOMO / "queries.jsonl")}
    qrels = {r["qid"]: r["relevant"] for r in jsonl(LOCOMO / "qrels_turns.jsonl")}
    qids = list(qrels)[: args.limit] if args.limit else list(qrels)
    modes = [m for m in args.modes.split(",") if m]
    print(f"LoCoMo: {len(turns):,} turns, {len(qids):,} questions with evidence turns; top {TOP}")

    # -- before: every turn searchable ---------------------------------------------------------
    before_root = fresh_project("lifecycle-before")
    started = time.perf_counter()
    before_ids = write_turns(before_root, turns)
    row("before: turns written as memories", f"{len(before_ids):,} in {time.perf_counter() - started:.1f} s")

    # -- after: the session compacted, summaries indexed by Lore -------------------------------
    small = tuple(int(x) for x in args.small.split(","))
    after_root = fresh_project("lifecycle-after", small)  # type: ignore[arg-type]
    started = time.perf_counter()
    with lore.open(after_root) as p:
        p.start_session("locomo")
        event_turn: dict[int, str] = {}
        for item in turns:  # through the service: each compaction's events go to 001's capture
            appended = p.record_events("locomo", [item["event"]])
            event_turn[appended.events[0].id or 0] = item["turn"]
        view = p.session_context("locomo")
        info = p.session_info("locomo")
        digest = Counter(r["type"] for r in p.list(tier="daily", limit=None))
    appended_s = time.perf_counter() - started
    live_events = {e.id for e in view.events if e.id is not None}
    live_items = [t for t in turns if t["turn"] in {event_turn[i] for i in live_events}]
    after_turn_ids = write_turns(after_root, live_items)
    from lore.sessions.archive import archived_ranges

    ranges = archived_ranges(after_root / ".lore/sessions/locomo")
    turn_event = {turn: event for event, turn in event_turn.items()}
    row(
        "after: session compacted",
        f"{info.compactions} compactions, {info.archived_event_count:,} events archived, "
        f"{len(live_items):,} live turns ({appended_s:.0f} s to append, compact and capture)",
    )
    row(
        "after: digest of the compacted events",
        ", ".join(f"{n} {kind}" for kind, n in digest.most_common()) or "nothing",
    )

    def summary_of(turn: str) -> str | None:
        event = turn_event.get(turn)
        for r in ranges:
            if event is not None and r.first <= event <= r.last:
                return f".lore/sessions/locomo/summaries/{r.name}.md"
        return None

    others = qids[:]
    random.Random(13).shuffle(others)
    for mode in modes:
        for root in (before_root, after_root):
            synced, embedded = index(root, mode)
            label = "before" if root == before_root else "after"
            row(
                f"{mode}: index {label}",
                f"sync {synced:.1f} s" + (f", embed {embedded:.1f} s" if embedded else ""),
            )
        results: defaultdict[str, Counter] = defaultdict(Counter)
        latency: list[float] = []
        with lore.open(before_root) as before, lore.open(after_root) as after:
            for qid, other in zip(qids, others):
                query = queries[qid]["text"]
                evidence = qrels[qid]
                group = "cat 1-4" if queries[qid]["category"] != 5 else "cat 5"
                answer = str(queries[qid].get("answer", "")).strip().lower()
                top_before = {before_ids.get(h.id) for h in before.search(query, limit=TOP, mode=mode)}
                started = time.perf_counter()
                hits = after.search(query, limit=TOP, mode=mode)
                latency.append(time.perf_counter() - started)
                turns_after = {after_turn_ids.get(h.id) for h in hits}
                summaries_after = {h.path for h in hits if h.path.startswith(".lore/sessions/")}
                session_hits = after.session_search(query, limit=TOP)
                summaries_only = {h.path for h in session_hits}
                wanted = {s for s in (summary_of(t) for t in evidence) if s}
                by_turn = any(t in turns_after for t in evidence)
                by_summary = bool(wanted & summaries_after)
                for name in (group, "all"):
                    b = results[name]
                    b["n"] += 1
                    b["before"] += any(t in top_before for t in evidence)
                    b["after"] += by_turn or by_summary
                    b["after_turn"] += by_turn
                    b["after_summary"] += by_summary and not by_turn
                    b["session_search"] += bool(wanted & summaries_only)
                    b["answer_in_summary"] += bool(answer) and any(
                        answer in (after_root / path).read_text().lower() for path in wanted & summaries_only
                    )
                    if queries[other]["conv"] != queries[qid]["conv"]:
                        b["control_n"] += 1
                        b["control"] += bool(
                            wanted & {h.path for h in after.session_search(queries[other]["text"], limit=TOP)}
                        )
        print(f"\n{mode}: answerable through `lore search` (top {TOP}), before vs after compaction")
        for name in ("cat 1-4", "all", "cat 5"):
            b = results[name]
            n = b["n"] or 1
            row(f"{name} (n={b['n']}): before", f"{b['before']:5d}  ({b['before'] / n:.1%})")
            row(
                f"{name}: after",
                f"{b['after']:5d}  ({b['after'] / n:.1%})  = {b['after_turn']} by a live turn "
                f"+ {b['after_summary']} by the range's summary",
            )
            row(
                f"{name}: after, `lore session search`",
                f"{b['session_search']:5d}  ({b['session_search'] / n:.1%})",
            )
            row(
                f"{name}: answer verbatim in the summary",
                f"{b['answer_in_summary']:5d}  ({b['answer_in_summary'] / n:.1%})",
            )
            if b["control_n"]:
                row(
                    f"{name}: control (other conv's question)",
                    f"{b['control'] / b['control_n']:.1%} by chance",
                )
        row(f"{mode}: search latency after", f"median {statistics.median(latency) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
