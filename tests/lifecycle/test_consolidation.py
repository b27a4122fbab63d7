"""Consolidation and review (seed 001): local merges with evidence, proposals that never touch
files without approval, the governance thresholds, apply and reject."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time

import pytest
import yaml

from conftest import ON_POSTGRES
from lore.errors import Conflict, UsageError

from .conftest import at, memory_files, snapshot

BODY = "Run the database migrations before seeding the test data, or the seed fails on missing tables."
DEPLOY_BODY = "Every deploy goes to the staging cluster for an hour before production traffic sees it."


def meta_of(path):
    return yaml.safe_load(path.read_text().split("---\n", 2)[1])


def write_durable(proj, name: str, title: str, body: str, *, day: float, evidence: int = 1, **fields) -> str:
    """A committed memory as a person would write it (evidence_count in its frontmatter)."""
    import uuid

    memory_id = str(uuid.uuid4())
    extra = "".join(f"{k}: {v}\n" for k, v in fields.items())
    text = (
        f"---\nid: {memory_id}\nsubject: {title}\ntype: decision\nkeywords: [config]\n"
        f"occurred_at: {at(day)}\n{extra}"
        + (f"evidence_count: {evidence}\n" if evidence > 1 else "")
        + f"---\n\n{body}\n"
    )
    (proj.project.memory_dir / name).write_text(text)
    return memory_id


def test_local_near_duplicates_merge_with_their_evidence(proj, clock):
    root = proj.project.root
    kept = proj.add(title="Migrations before seeding", body=BODY, tier="daily", occurred_at=at(0))
    dup = proj.add(title="Migrations first", body=BODY + " Always.", tier="daily", occurred_at=at(1))
    report = proj.consolidate()
    assert report.merged == [{"kept": kept.id, "merged": dup.id, "similarity": pytest.approx(0.9, abs=0.1)}]
    (left,) = memory_files(root, ".lore/local/daily")
    assert meta_of(left)["id"] == kept.id and meta_of(left)["evidence_count"] == 2
    # What only the newer said is kept (it went to the trash with it, then `lore gc`).
    assert left.read_text().rstrip().endswith("missing tables. Always.")
    assert [e.id for e in proj.trash_entries()] == [dup.id]
    assert proj.list(tier="warm")[0]["id"] == kept.id  # evidence 2: COLD → WARM


def test_a_private_memory_is_never_merged_with_one_others_see(proj, tmp_path):
    """An audit: consolidation merged an agent's private memory into a shared
    daily one (its text then in every agent's search) or, the other way, sent
    the shared one to the trash for a private copy others cannot see. A
    pair of different owners is not compared at all: no merge, no proposal."""
    import lore

    root = proj.project.root
    proj.close()
    with lore.open(root, agent="bob") as bob:
        shared = bob.add(title="Deploy note", body=BODY, tier="daily", occurred_at=at(0))
    with lore.open(root, agent="alice") as alice:
        mine = alice.add(
            title="Deploy note",
            body=BODY + " My token is in the tangerine notebook.",
            private=True,
            tier="daily",
        )
        report = alice.consolidate()
        assert report.merged == [] and report.proposals == [], report
    with lore.open(root, agent="bob") as bob:
        assert [h.id for h in bob.search("tangerine")] == []
        assert {m["id"] for m in bob.list()} == {shared.id}
        bob.consolidate()
    with lore.open(root, agent="alice") as alice:
        assert {m["id"] for m in alice.list()} == {shared.id, mine.id}
        assert alice.trash_entries() == []
        # Two copies of her own private memory still merge.
        alice.add(
            title="Deploy note again", body=BODY + " My token is in the tangerine notebook!", private=True
        )
        assert [m["kept"] for m in alice.consolidate().merged] == [mine.id]


def test_the_steps_of_a_series_are_not_contradictions_of_each_other(proj):
    """An audit: eight memories "Step N: we decided to run migration script N
    before the deploy" made 28 contradiction proposals, one per pair: their
    texts differ by their numbers, read as one fact said eight ways. A real
    change of value between two memories of one title is still found."""
    for n in range(1, 6):
        body = f"Step {n}: we decided to run the migration script number {n} before the deploy."
        write_durable(proj, f"step-{n}.md", f"Step {n}", body, day=n)
    assert proj.consolidate().proposals == []
    write_durable(proj, "py-a.md", "Python version", "The service runs on Python 3.10 in production.", day=6)
    write_durable(proj, "py-b.md", "Python version", "The service runs on Python 3.11 in production.", day=7)
    kinds = [p["kind"] for p in proj.consolidate().proposals]
    assert kinds == ["contradiction"], kinds


def test_a_local_copy_of_a_committed_memory_becomes_its_evidence_without_touching_it(proj):
    root = proj.project.root
    durable = write_durable(proj, "migrations.md", "Migrations before seeding", BODY, day=0)
    proj.add(title="Seen again", body=BODY, tier="daily", occurred_at=at(2))
    before = snapshot(root, ".lore/memory")
    report = proj.consolidate()
    assert [m["kept"] for m in report.merged] == [durable]
    assert snapshot(root, ".lore/memory") == before
    assert memory_files(root, ".lore/local/daily") == []
    assert {r["id"]: r["evidence_count"] for r in proj.list()}[durable] == 2
    # The pending evidence survives an index rebuild (the ledger is replayed). On
    # PostgreSQL the index is a shared database no clone deletes: it survives a reopen.
    proj.close()
    if not ON_POSTGRES:
        (root / ".lore/index.db").unlink()
    import lore

    again = lore.open(root)
    try:
        assert {r["id"]: r["evidence_count"] for r in again.list()}[durable] == 2
    finally:
        again.close()


def test_a_torn_ledger_line_neither_stops_the_replay_nor_swallows_the_next_one(proj):
    # A ledger append cut short (a full disk, a crash) left a torn last line: the next
    # append was glued onto it (both lost), and a line torn inside a UTF-8 character made
    # every command of a rebuilt index fail with "text is not valid UTF-8 ...; give UTF-8
    # input", while `lore doctor` found nothing.
    import json

    root = proj.project.root
    first = write_durable(proj, "migrations.md", "Migrations before seeding", BODY, day=0)
    proj.add(title="Seen again", body=BODY, tier="daily", occurred_at=at(2))
    proj.consolidate()
    ledger = root / ".lore/local/evidence.jsonl"
    ledger.write_bytes(ledger.read_bytes() + '{"key": "torn-\u00e9'.encode()[:-1])
    second = write_durable(proj, "deploys.md", "Deploys go through staging", DEPLOY_BODY, day=3)
    copy = proj.add(title="Deploys again", body=DEPLOY_BODY, tier="daily", occurred_at=at(4))
    proj.consolidate()
    proj.close()
    records = []
    for line in ledger.read_bytes().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            assert line == '{"key": "torn-\u00e9'.encode()[:-1]  # the torn line alone
    assert {"moved": copy.id, "to": second} in records
    if not ON_POSTGRES:
        (root / ".lore/index.db").unlink()
    import lore

    again = lore.open(root)
    try:
        counts = {r["id"]: r["evidence_count"] for r in again.list()}
        assert counts[first] == 2 and counts[second] == 2
    finally:
        again.close()


def test_proposals_never_touch_files_without_approval(proj, cli_in):
    root = proj.project.root
    older, newer = two_timeouts(proj, evidence=1)
    write_durable(proj, "a.md", "Use pnpm", "Use pnpm to install the frontend dependencies.", day=0)
    write_durable(
        proj, "b.md", "Not pnpm", "Don't use pnpm to install the frontend dependencies; npm only.", day=5
    )
    before = snapshot(root)
    report = cli_in(root, "consolidate", "--json")
    kinds = sorted((p["kind"], p["status"]) for p in report["proposals"])
    assert kinds == [("contradiction", "held"), ("contradiction", "held")]
    assert snapshot(root) == before, "consolidate changed a file"

    assert cli_in(root, "review", "--json") == []  # held: not enough evidence yet
    held = cli_in(root, "review", "--all", "--json")
    timeout = next(p for p in held if older in p["memory_ids"])
    assert timeout["memory_ids"] == [older, newer]
    assert "oauth_timeout is 30 here, 5 before" in timeout["reason"]
    assert f"+superseded_by: {newer}" in timeout["diff"]
    assert "confidence > 0.9 and evidence ≥ 5" in timeout["held_because"]
    proc = cli_in(root, "review", "--apply", timeout["id"], ok=False)
    assert proc.returncode != 0 and "held" in proc.stderr and "Traceback" not in proc.stderr
    pnpm = next(p for p in held if older not in p["memory_ids"])
    assert "one says not" in pnpm["reason"]
    assert snapshot(root) == before


def two_timeouts(proj, evidence: int = 6) -> tuple[str, str]:
    """Two committed memories, the newer raising the older's value (with `evidence`:
    by default enough for the proposal to be applied)."""
    older = write_durable(
        proj, "timeout-5.md", "OAuth timeout", "Set OAUTH_TIMEOUT=5 for the login call.", day=0
    )
    newer = write_durable(
        proj,
        "timeout-30.md",
        "OAuth timeout raised",
        "Set OAUTH_TIMEOUT=30 for the login call; 5 was too short behind the proxy.",
        day=10,
        evidence=evidence,
    )
    return older, newer


def test_a_memory_is_not_superseded_by_one_removed_or_changed_since_it_was_proposed(proj, cli_in):
    """Applying "superseded by B" after B was removed archived the older memory
    pointing at a memory in the trash: both went out of every list. B is now
    checked as the files the proposal changes are."""
    root = proj.project.root
    older, newer = two_timeouts(proj)
    (proposal,) = cli_in(root, "consolidate", "--json")["proposals"]
    (listed,) = cli_in(root, "review", "--json")
    assert [c["path"] for c in listed["changes"]] == [".lore/memory/timeout-5.md"]  # B is not changed
    cli_in(root, "rm", newer[:8], raw=True)
    (shown,) = cli_in(root, "review", "--json")
    assert shown["outdated"]
    before = snapshot(root)
    proc = cli_in(root, "review", "--apply", proposal["id"], ok=False)
    assert proc.returncode != 0 and "timeout-30.md changed since proposal" in proc.stderr
    assert snapshot(root) == before
    assert older in [h["id"] for h in cli_in(root, "search", "OAUTH_TIMEOUT", "--json")]


def test_two_memories_of_the_same_second_are_ordered_by_when_they_were_written(proj, cli_in):
    """Times have whole seconds: of two memories written in the same one (an agent
    correcting itself), the one written last is the newer, whatever their names."""
    root = proj.project.root
    first = write_durable(proj, "timeout.md", "Timeout", "Set PROGRESS_TIMEOUT=5 for the ETA refresh.", day=0)
    os.utime(proj.project.memory_dir / "timeout.md", ns=(1_000_000_000, 1_000_000_000))
    then = write_durable(  # sorts before timeout.md by name ("-" < ".")
        proj, "timeout-raised.md", "Timeout raised", "Set PROGRESS_TIMEOUT=30 for the ETA refresh.", day=0
    )
    cli_in(root, "consolidate", "--json")
    (proposal,) = cli_in(root, "review", "--all", "--json")
    assert proposal["kind"] == "contradiction" and proposal["memory_ids"] == [first, then]
    assert "is 30 here, 5 before" in proposal["reason"]


def test_review_applies_an_open_proposal_and_its_effect(proj, cli_in):
    root = proj.project.root
    older, newer = two_timeouts(proj)
    before = snapshot(root)
    (proposal,) = cli_in(root, "consolidate", "--json")["proposals"]
    assert (proposal["kind"], proposal["status"]) == ("contradiction", "open")
    assert snapshot(root) == before
    shown = cli_in(root, "review", raw=True).stdout
    assert proposal["id"] in shown and "+superseded_by:" in shown and "review --apply ID" in shown
    assert snapshot(root) == before

    done = cli_in(root, "review", "--apply", proposal["id"][:6], "--json")
    assert done["status"] == "applied"
    after = snapshot(root)
    changed = {path for path in after if after[path] != before.get(path)}
    assert changed == {".lore/memory/timeout-5.md"}
    assert meta_of(root / ".lore/memory/timeout-5.md")["superseded_by"] == newer
    hits = [h["id"] for h in cli_in(root, "search", "OAUTH_TIMEOUT login", "--json")]
    assert newer in hits and older not in hits  # superseded: archived, out of search and recall
    assert older in [h["id"] for h in cli_in(root, "search", "OAUTH_TIMEOUT", "--include-archived", "--json")]
    proc = cli_in(root, "review", "--apply", proposal["id"], ok=False)
    assert "applied already" in proc.stderr


@pytest.mark.skipif(ON_POSTGRES, reason="the file lock, not the index backend, is what is tested")
def test_an_apply_and_a_reject_at_once_decide_the_proposal_once(proj, cli_in):
    """`--apply` holds the proposal while it writes (here: waiting for the write
    lock the test holds); a `--reject` meanwhile waits, then finds it applied.
    Without that, both succeeded: the file changed and the proposal said rejected."""
    from lore.locking import file_lock

    root = proj.project.root
    write_durable(proj, "timeout-5.md", "OAuth timeout", "Set OAUTH_TIMEOUT=5 for the login call.", day=0)
    write_durable(
        proj,
        "timeout-30.md",
        "OAuth timeout raised",
        "Set OAUTH_TIMEOUT=30 for the login call; 5 was too short behind the proxy.",
        day=10,
        evidence=6,
    )
    (proposal,) = cli_in(root, "consolidate", "--json")["proposals"]

    def run(*args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "lore", "review", *args, proposal["id"]],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    with file_lock(root / ".lore/local/.write.lock"):
        applying = run("--apply")
        time.sleep(3)  # it has read the proposal and waits for the write lock
        rejecting = run("--reject")
        time.sleep(2)
    results = [(p.wait(timeout=60), p.communicate()[1]) for p in (applying, rejecting)]
    assert [code for code, _ in results] == [0, 1], results
    assert "applied already" in results[1][1]
    assert cli_in(root, "review", "--all", "--json") == []  # decided: applied, once
    assert "superseded_by" in meta_of(root / ".lore/memory/timeout-5.md")


def test_an_empty_proposal_id_is_an_error_not_a_listing(proj, cli_in):
    """`lore review --apply "$ID"` with ID unset must fail, not list and exit 0."""
    root = proj.project.root
    for option in ("--apply", "--reject"):
        proc = cli_in(root, "review", option, "", ok=False)
        assert proc.returncode == 1 and "no proposal ''" in proc.stderr, (option, proc.stdout, proc.stderr)


def test_rejected_proposals_are_not_proposed_again(proj, cli_in):
    root = proj.project.root
    write_durable(proj, "a.md", "Deploy", "Deploy with make deploy from the main branch.", day=0, evidence=5)
    write_durable(
        proj,
        "b.md",
        "Deploy steps",
        "Deploy with make deploy from the main branch. Run make migrate first, then make deploy, "
        "then check the health endpoint.",
        day=3,
        evidence=7,
    )
    (proposal,) = cli_in(root, "consolidate", "--json")["proposals"]
    assert proposal["kind"] == "supersede"
    before = snapshot(root)
    assert cli_in(root, "review", "--reject", proposal["id"], "--json")["status"] == "rejected"
    assert snapshot(root) == before
    assert cli_in(root, "consolidate", "--json")["proposals"] == []
    assert cli_in(root, "review", "--all", "--json") == []


def test_promotion_to_durable_needs_evidence_and_approval(proj, cli_in):
    root = proj.project.root
    for n in range(5):  # a gotcha seen five times: confidence 0.95, evidence 5
        proj.capture_stdout(f"fatal: remote origin already exists (attempt {n})\n", source=f"run-{n}")
    (daily,) = memory_files(root, ".lore/local/daily")
    gotcha = meta_of(daily)
    assert (gotcha["evidence_count"], gotcha["confidence"]) == (5, 0.95)
    before = snapshot(root)
    (proposal,) = cli_in(root, "consolidate", "--json")["proposals"]
    assert (proposal["kind"], proposal["status"]) == ("promote", "open")
    assert snapshot(root) == before
    cli_in(root, "review", "--apply", proposal["id"], "--json")
    (durable,) = memory_files(root, ".lore/memory")
    promoted = meta_of(durable)
    assert promoted["id"] == gotcha["id"] and promoted["evidence_count"] == 5
    assert memory_files(root, ".lore/local/daily") == []
    assert {r["id"]: r["evidence_count"] for r in proj.list()}[gotcha["id"]] == 5  # counted once


def test_a_promotion_whose_file_name_was_taken_meanwhile_takes_a_free_one(proj, cli_in):
    """A memory written under the promoted one's name after the proposal: every
    apply was refused ("changed since"), and consolidating proposed the same name again."""
    root = proj.project.root
    for n in range(5):
        proj.capture_stdout(f"fatal: remote origin already exists (attempt {n})\n", source=f"run-{n}")
    (proposal,) = cli_in(root, "consolidate", "--json")["proposals"]
    (listed,) = cli_in(root, "review", "--json")
    (created,) = [c["path"] for c in listed["changes"] if c["action"] == "create"]
    mine = root / created
    mine.write_text("---\nsubject: My own note\n---\nThe remote is added by the setup script already.\n")
    cli_in(root, "review", "--apply", proposal["id"], "--json")
    assert "The remote is added by the setup script" in mine.read_text()  # untouched
    assert len(memory_files(root, ".lore/memory")) == 2 and memory_files(root, ".lore/local/daily") == []


def test_apply_refuses_when_a_file_changed_since_the_proposal(proj):
    root = proj.project.root
    write_durable(proj, "a.md", "Timeout", "Set API_TIMEOUT=5 for the client.", day=0)
    write_durable(proj, "b.md", "Timeout raised", "Set API_TIMEOUT=60 for the client.", day=2, evidence=6)
    (proposal,) = proj.consolidate().proposals
    target = root / ".lore/memory/a.md"
    target.write_text(target.read_text().replace("the client", "the HTTP client"))
    edited = snapshot(root)
    with pytest.raises(Conflict, match="changed since"):
        proj.apply_proposal(proposal["id"])
    assert snapshot(root) == edited
    assert proj.proposals()[0].outdated


def test_held_proposals_cannot_be_applied_from_python_either(proj):
    write_durable(proj, "a.md", "Timeout", "Set API_TIMEOUT=5 for the client.", day=0)
    write_durable(proj, "b.md", "Timeout raised", "Set API_TIMEOUT=60 for the client.", day=2)
    (proposal,) = proj.consolidate().proposals
    with pytest.raises(UsageError, match="held"):
        proj.apply_proposal(proposal["id"])


def test_review_output_escapes_control_characters_from_memory_text(proj, cli_in):
    """A proposal quotes memory text, which is anyone's: a terminal escape in it
    (clear screen, an OSC 52 clipboard write) is shown escaped, never sent raw."""
    root = proj.project.root
    write_durable(proj, "a.md", "Timeout", "Set API_TIMEOUT=5 for the client.\x1b[2J", day=0)
    write_durable(
        proj,
        "b.md",
        "Timeout raised",
        "Set API_TIMEOUT=60 for the client.\x1b]52;c;aGk=\x07",
        day=2,
        evidence=6,
    )
    (proposal,) = proj.consolidate().proposals
    shown = cli_in(root, "review", raw=True).stdout
    assert proposal["id"] in shown
    assert "\x1b" not in shown and "\x07" not in shown
    assert "\\x1b" in shown


def test_review_is_interactive_on_a_terminal(proj):
    root = proj.project.root
    write_durable(proj, "a.md", "Timeout", "Set API_TIMEOUT=5 for the client.", day=0)
    write_durable(proj, "b.md", "Timeout raised", "Set API_TIMEOUT=60 for the client.", day=2, evidence=6)
    (proposal,) = proj.consolidate().proposals
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lore", "review"],
        cwd=root,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "NO_COLOR": "1"},
    )
    os.close(slave)
    output = b""
    deadline = time.time() + 60
    while b"apply, reject" not in output and time.time() < deadline:
        output += os.read(master, 4096)
    os.write(master, b"a\n")
    proc.wait(timeout=60)
    try:
        while True:
            chunk = os.read(master, 4096)
            if not chunk:
                break
            output += chunk
    except OSError:
        pass
    os.close(master)
    assert proc.returncode == 0, output.decode()
    assert f"applied {proposal['id']}" in output.decode()
    assert meta_of(root / ".lore/memory/a.md")["superseded_by"]


def test_a_proposal_never_repeats_a_secret_written_into_a_memory_by_hand(proj):
    """The file a proposal would write is redacted as any write is, and its
    diff shows the file as it may be shown (the proposal is kept in the index)."""
    root = proj.project.root
    token = "ghp_" + "4HQb8GeavjTEQykdeLFkeJnjb7wXh9HjQtDc"
    write_durable(proj, "a.md", "Timeout", f"Set API_TIMEOUT=5 for the client (token {token}).", day=0)
    write_durable(proj, "b.md", "Timeout raised", "Set API_TIMEOUT=60 for the client.", day=2, evidence=6)
    (proposal,) = proj.consolidate().proposals
    (shown,) = proj.proposals()
    assert "superseded_by" in shown.diff and token not in shown.diff
    if not ON_POSTGRES:
        assert token.encode() not in (root / ".lore/index.db").read_bytes()
    proj.apply_proposal(proposal["id"])
    assert token not in (root / ".lore/memory/a.md").read_text()
