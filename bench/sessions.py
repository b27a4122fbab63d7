"""Issue 13 session benchmark: a long real transcript through the session store.

    python bench/sessions.py [--events 20000] [--cli-appends 200] [--small 4000,8000,1000]

The transcript is LoCoMo (../shared/bench-data/locomo): the 10 conversations'
5,882 turns, concatenated in order into ONE session, each turn a message
(the conversation's first speaker is ``user``, the other ``assistant``; the
text is ``Speaker: text`` plus ``[shared <image caption>]``, as the data set's
own BM25 baseline indexes it), dated by its session's date (+1 minute per turn).

Printed:

1. Append throughput through the store API over ``--events`` events (the 5,882
   turns replayed until that many: LoCoMo has fewer than 20k turns), with the
   default limits (soft 100k / hard 150k / protected 20k tokens), so
   compactions run as they would live: their count, time (offline extractive
   summariser) and the archive's size.
   Then the same through ``Lore.record_events`` (what the CLI, MCP and hooks
   call): each compaction's archived events also go to 001's capture (digest
   in the daily tier, errors counted); the extra time is that capture.
2. Append throughput through the CLI (``lore session append``, one process
   per event) for ``--cli-appends`` events.
3. Answerability of the LoCoMo questions before and after compaction, on one
   pass of the 5,882 turns. "Answerable" (any of the question's evidence turns,
   from the data set's qrels_turns.jsonl):
   - before: the evidence turn is in the top 10 of a simple BM25 over all the
     session's events (no compaction);
   - after: the evidence turn is still in the live context view and in the top
     10, or the summary of the archived range holding it is in the top 10, of
     the same BM25 over the summary files + the live view's events.
   BM25: Okapi, k1 = 1.2, b = 0.75, lower-cased word tokens, Lore's stop words
   removed, no stemming; one index over the whole session (all 10
   conversations: the data set README's "harder variant"). Run twice: with the
   default limits (one pass makes few compactions) and with small limits
   (``--small``) so that most of the session is summarised. A control line
   shows how often the right summary lands in the top 10 for a question taken
   at random from another conversation (what the summary criterion gives by
   chance). A summary covers a whole range (with ``--small``, about one LoCoMo
   session), so "found by its summary" is range-level retrieval, not the
   answer itself; a stricter line counts the questions whose answer text
   appears verbatim in the summary found. The lead re-measures this later
   through Lore's real search.
"""

from __future__ import annotations

import argparse
import gzip
import math
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from pathlib import Path

from _common import BENCH_DATA, jsonl, row

LOCOMO = BENCH_DATA / "locomo"
WORD = re.compile(r"[a-z0-9]+")


# ---------------------------------------------------------------- the transcript


def locomo_turns() -> list[dict]:
    """The turns as session events to append: (turn id, event), in conversation order."""
    from lore.sessions import message

    turns = jsonl(LOCOMO / "corpus_turns.jsonl")
    first_speaker: dict[str, str] = {}
    minute: Counter = Counter()
    out = []
    for turn in turns:
        first_speaker.setdefault(turn["conv"], turn["speaker"])
        role = "user" if turn["speaker"] == first_speaker[turn["conv"]] else "assistant"
        text = f"{turn['speaker']}: {turn['text']}"
        if turn.get("image_caption"):
            text += f" [shared {turn['image_caption']}]"
        start = _session_time(turn["date_time"])
        when = start + timedelta(minutes=minute[turn["session"]])
        minute[turn["session"]] += 1
        out.append(
            {"turn": turn["id"], "event": message(role, text, timestamp=when.strftime("%Y-%m-%dT%H:%M:%SZ"))}
        )
    return out


def _session_time(text: str) -> datetime:
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return datetime(2023, 1, 1)


def fresh_project(name: str, limits: tuple[int, int, int] | None = None) -> Path:
    import lore

    root = Path(tempfile.mkdtemp(prefix=f"lore-bench-sessions-{name}-"))
    lore.init(root).close()
    if limits:
        soft, hard, protected = limits
        config = root / ".lore/config.toml"
        config.write_text(
            config.read_text() + f"\n[sessions]\nsoft_limit_tokens = {soft}\nhard_limit_tokens = {hard}\n"
            f"protected_recent_tokens = {protected}\n"
        )
    return root


# ---------------------------------------------------------------- 1. store API throughput


def api_throughput(turns: list[dict], count: int, *, service: bool = False) -> None:
    """`service`: through ``Lore.record_events`` (each compaction's events then go to
    001's capture: digest, error counts) instead of the session store alone."""
    import lore

    root = fresh_project("api")
    project = lore.open(root, agent="bench")
    store = project.sessions
    store.start("locomo", agent="bench")
    stream = [turns[i % len(turns)]["event"] for i in range(count)]
    compactions = []
    compaction_calls: list[float] = []  # wall time of the appends that compacted (and captured)
    tokens = 0
    started = time.perf_counter()
    for event in stream:
        began = time.perf_counter()
        result = project.record_events("locomo", [event]) if service else store.append("locomo", event)
        tokens += result.events[0].tokens
        if result.compaction:
            compactions.append(result.compaction)
            compaction_calls.append(time.perf_counter() - began)
    total = time.perf_counter() - started
    compacting = sum(compaction_calls)
    info = store.get("locomo")
    folder = root / ".lore/sessions/locomo"
    archives = sorted((folder / "archive").glob("*.jsonl.gz"))
    gz = sum(p.stat().st_size for p in archives)
    raw = sum(len(gzip.decompress(p.read_bytes())) for p in archives)
    summaries = sum(p.stat().st_size for p in (folder / "summaries").glob("*.md"))
    where = "Lore.record_events (compactions captured)" if service else "Store API"
    print(f"\n1. {where}: {count:,} message events (LoCoMo turns, replayed), default limits")
    row("append throughput (incl. compactions)", f"{count / total:,.0f} events/s  ({total:.1f} s)")
    row("append throughput (appends alone)", f"{count / (total - compacting):,.0f} events/s")
    row("tokens appended", f"{tokens:,} ({tokens / count:.0f} per event)")
    row("compactions (soft limit crossed)", f"{len(compactions)}")
    if compactions:
        row(
            "compaction time (extractive)",
            f"median {statistics.median(c.seconds for c in compactions) * 1000:.0f} ms, "
            f"max {max(c.seconds for c in compactions) * 1000:.0f} ms, "
            f"total {sum(c.seconds for c in compactions):.2f} s",
        )
        if service:
            row(
                "compaction + capture (the append's wall time)",
                f"median {statistics.median(compaction_calls) * 1000:.0f} ms, total {compacting:.2f} s",
            )
            kinds = Counter(r["type"] for r in project.list(tier="daily", limit=None))
            row(
                "digest kept (daily tier)", ", ".join(f"{n} {k}" for k, n in kinds.most_common()) or "nothing"
            )
        row(
            "events / tokens per compaction",
            f"{statistics.median(c.events_archived for c in compactions):,.0f} events, "
            f"{statistics.median(c.tokens_archived for c in compactions):,.0f} tokens (median)",
        )
        row(
            "summary size", f"{statistics.median(c.summary_tokens for c in compactions):,.0f} tokens (median)"
        )
    row(
        "archive",
        f"{len(archives)} files, {gz / 1e6:.2f} MB gzip for {raw / 1e6:.2f} MB raw ({raw / max(gz, 1):.1f}x)",
    )
    row("summaries", f"{summaries / 1e3:.0f} kB Markdown")
    row("live view", f"{info.token_count:,} tokens, {info.live_event_count:,} live events")
    row("session.jsonl", f"{(folder / 'session.jsonl').stat().st_size / 1e6:.2f} MB")
    project.close()


# ---------------------------------------------------------------- 2. CLI throughput


def cli_throughput(turns: list[dict], count: int) -> None:
    root = fresh_project("cli")
    subprocess.run(
        [sys.executable, "-m", "lore", "session", "start", "--id", "cli"],
        cwd=root,
        check=True,
        capture_output=True,
    )
    times = []
    for i in range(count):
        event = turns[i % len(turns)]["event"]
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "lore",
                "session",
                "append",
                "cli",
                "--role",
                event["role"],
                "--content",
                event["content"],
            ],
            cwd=root,
            check=True,
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
        times.append(time.perf_counter() - started)
    print(f"\n2. CLI: {count} × `lore session append` (one process each)")
    row("throughput", f"{count / sum(times):.1f} events/s")
    row("per append", f"median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms")


# ---------------------------------------------------------------- 3. answerability


class BM25:
    """Okapi BM25 over (id, text) documents: k1 1.2, b 0.75, stop words out, no stemming."""

    def __init__(self, docs: list[tuple[str, str]], k1: float = 1.2, b: float = 0.75):
        from lore.search.text import STOPWORDS

        self.stop = STOPWORDS
        self.ids = [doc_id for doc_id, _ in docs]
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        lengths = []
        for index, (_, text) in enumerate(docs):
            counts = Counter(self.tokens(text))
            lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings[term].append((index, tf))
        self.norm = [k1 * (1 - b + b * n / (sum(lengths) / len(lengths))) for n in lengths]
        self.k1 = k1
        total = len(docs)
        self.idf = {
            t: math.log(1 + (total - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self.postings.items()
        }

    def tokens(self, text: str) -> list[str]:
        return [w for w in WORD.findall(text.lower()) if w not in self.stop]

    def top(self, query: str, k: int = 10) -> list[str]:
        scores: dict[int, float] = defaultdict(float)
        for term in set(self.tokens(query)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for index, tf in self.postings[term]:
                scores[index] += idf * tf * (self.k1 + 1) / (tf + self.norm[index])
        best = sorted(scores.items(), key=lambda item: -item[1])[:k]
        return [self.ids[index] for index, _ in best]


def answerability(turns: list[dict], limits: tuple[int, int, int] | None, label: str) -> None:
    import lore
    from lore.sessions.archive import archived_ranges, read_summary

    root = fresh_project("answer", limits)
    store = lore.open(root).sessions
    store.start("locomo", agent="bench")
    turn_of_event: dict[int, str] = {}
    for item in turns:
        event = store.append("locomo", item["event"]).events[0]
        turn_of_event[event.id] = item["turn"]
    event_of_turn = {turn: event_id for event_id, turn in turn_of_event.items()}

    queries = {q["qid"]: q for q in jsonl(LOCOMO / "queries.jsonl")}
    qrels = {r["qid"]: r["relevant"] for r in jsonl(LOCOMO / "qrels_turns.jsonl")}

    before_index = BM25([(turn, item["event"]["content"]) for item, turn in ((t, t["turn"]) for t in turns)])

    folder = root / ".lore/sessions/locomo"
    view = store.context("locomo")
    live = {e.id for e in view.events if e.id is not None}
    ranges = archived_ranges(folder)
    docs = []
    for r in ranges:
        memory = read_summary(r.summary)
        docs.append((f"summary:{r.first}-{r.last}", f"{memory.title}\n{memory.body}" if memory else ""))
    docs += [(turn_of_event[e.id], e.content or "") for e in view.events if e.id is not None]
    after_index = BM25(docs)
    summary_text = {doc_id: text.lower() for doc_id, text in docs if doc_id.startswith("summary:")}

    def summary_of(turn: str) -> str | None:
        event_id = event_of_turn.get(turn)
        for r in ranges:
            if event_id is not None and r.first <= event_id <= r.last:
                return f"summary:{r.first}-{r.last}"
        return None

    def answerable_after(query: str, evidence: list[str]) -> tuple[bool, set[str]]:
        """(found by a live turn, the evidence's summaries found in the top 10)."""
        top = set(after_index.top(query))
        by_turn = any(event_of_turn.get(t) in live and t in top for t in evidence)
        return by_turn, {s for s in (summary_of(t) for t in evidence) if s in top}

    qids = list(qrels)
    others = qids[:]
    random.Random(13).shuffle(others)
    results: defaultdict[str, Counter] = defaultdict(Counter)
    for qid, other in zip(qids, others):
        evidence = qrels[qid]
        group = "cat 1-4" if queries[qid]["category"] != 5 else "cat 5"
        for name in (group, "all"):
            bucket = results[name]
            bucket["n"] += 1
            bucket["before"] += any(t in set(before_index.top(queries[qid]["text"])) for t in evidence)
            by_turn, summaries = answerable_after(queries[qid]["text"], evidence)
            bucket["after"] += by_turn or bool(summaries)
            bucket["after_turn"] += by_turn
            bucket["after_summary"] += bool(summaries) and not by_turn
            answer = str(queries[qid].get("answer", "")).strip().lower()
            bucket["answer_in_summary"] += bool(answer) and any(answer in summary_text[s] for s in summaries)
            bucket["in_live"] += any(event_of_turn.get(t) in live for t in evidence)
            if queries[other]["conv"] != queries[qid]["conv"]:
                bucket["control_n"] += 1
                bucket["control"] += bool(answerable_after(queries[other]["text"], evidence)[1])

    info = store.get("locomo")
    soft, hard, protected = limits or (100_000, 150_000, 20_000)
    print(
        f"\n3{label}. Answerability, {len(turns):,} turns, limits soft {soft:,} / hard {hard:,} / protected {protected:,}"
    )
    row("compactions / summaries", f"{info.compactions} ({info.archived_event_count:,} events archived)")
    row("live view", f"{len(live):,} events, {view.tokens:,} tokens ({view.summaries} summaries in it)")
    for name in ("cat 1-4", "all", "cat 5"):
        b = results[name]
        n = b["n"]
        row(f"{name} (n={n}): answerable before", f"{b['before']:5d}  ({b['before'] / n:.1%})")
        row(
            f"{name}: answerable after",
            f"{b['after']:5d}  ({b['after'] / n:.1%})  = {b['after_turn']} by the live turn "
            f"+ {b['after_summary']} by the range's summary",
        )
        row(f"{name}: evidence still in the live view", f"{b['in_live']:5d}  ({b['in_live'] / n:.1%})")
        row(
            f"{name}: answer verbatim in the summary found",
            f"{b['answer_in_summary']:5d}  ({b['answer_in_summary'] / n:.1%})",
        )
        if b["control_n"]:
            row(
                f"{name}: control (other conv's question)",
                f"{b['control'] / b['control_n']:.1%} get the right summary in the top 10 by chance",
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=20000, help="events for the API throughput run")
    parser.add_argument("--cli-appends", type=int, default=200)
    parser.add_argument(
        "--small", default="4000,8000,1000", help="soft,hard,protected for the small-limits run"
    )
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: api,service,cli,answer")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    turns = locomo_turns()
    print(f"LoCoMo: {len(turns):,} turns from {len({t['turn'].split(':')[0] for t in turns})} conversations")
    if "api" not in skip:
        api_throughput(turns, args.events)
    if "service" not in skip:
        api_throughput(turns, args.events, service=True)
    if "cli" not in skip:
        cli_throughput(turns, args.cli_appends)
    if "answer" not in skip:
        answerability(turns, None, "a")
        small = tuple(int(x) for x in args.small.split(","))
        answerability(turns, small, "b")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
