"""Links between memories (issue 14): Markdown links, [[wikilinks]] and typed
relations, indexed both ways; renames and retitles rewrite the links to a
memory; broken links reported by doctor; `lore show` backlinks and `lore
graph`; recall following "supersedes"; privacy of links and backlinks.

Real projects in temp dirs, real files and SQLite; the CLI runs as a
subprocess. BM25 only (`[embedding] provider = "none"`) to stay fast.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lore
from lore.errors import UsageError
from lore.memory.edits import Edit
from lore.memory.links import near_miss, parse_links, relation_name, typo_message
from test_code_index import configure


@pytest.fixture
def proj(tmp_path):
    root = tmp_path / "proj"
    lore.init(root).close()
    configure(root)
    p = lore.open(root)
    yield p
    p.close()


def add(p, title: str, body: str, **fields):
    fields.setdefault("tags", ["t"])
    return p.add(title=title, body=body, **fields)


def text(p, rel: str) -> str:
    return (p.project.root / rel).read_text()


def name(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]


def by_title(links) -> dict[str, str]:
    return {link.title: link.relation for link in links}


# -- parsing --------------------------------------------------------------------------------


def test_parse_finds_every_kind_of_link_and_none_in_code():
    body = (
        "# Notes\n"
        "See [the UTC rule](2026-01-01-utc.md), [[Old Policy|the old one]] and `[[not a link]]`.\n"
        "External [x](https://example.com/a.md), [docs](../../docs/a.md), ![img](pic.md).\n"
        "```\n[[in a code block]]\n```\n"
        "## Relations\n"
        "- supersedes [[Old Policy]]\n"
        "- depends_on: 73fae3a7\n"
        "- Relates to [other](sub/other.md#part)\n"
        "## After\n"
        "- contradicts [[Not a relation here]]\n"
    )
    relations = {"contradicts": [["Thing"]], "implements": "x.md"}
    links = [
        (link.relation, link.target_key, link.kind, link.origin, link.line)
        for link in parse_links(body, relations, ".lore/memory/m.md", 10)
    ]
    assert links == [
        ("contradicts", "thing", "name", "frontmatter", None),
        ("implements", ".lore/memory/x.md", "path", "frontmatter", None),
        ("links_to", ".lore/memory/2026-01-01-utc.md", "path", "body", 11),
        ("links_to", "old policy", "name", "body", 11),
        ("supersedes", "old policy", "name", "section", 17),
        ("depends_on", "73fae3a7", "name", "section", 18),
        ("relates_to", ".lore/memory/sub/other.md", "path", "section", 19),
        ("links_to", "not a relation here", "name", "body", 21),
    ]


def test_frontmatter_relations_as_a_list():
    value = ["supersedes [[Old Policy]]", {"type": "depends_on", "target": "abc12345"}, "relates_to Other"]
    found = [
        (link.relation, link.target_key)
        for link in parse_links("Body text here.", value, ".lore/memory/m.md")
    ]
    assert found == [("supersedes", "old policy"), ("depends_on", "abc12345"), ("relates_to", "other")]


# -- both directions -------------------------------------------------------------------------------


def test_links_are_indexed_both_ways_by_title_id_path_and_file_name(proj):
    utc = add(proj, "Store times in UTC", "Every timestamp is stored in UTC.")
    tz = add(proj, "Time zones in the UI", "The UI converts to local time only when rendering.")
    notes = add(
        proj,
        "Date handling notes",
        f"Read [[Store times in UTC]] first, then [the UI rule]({name(tz.path)}).\n"
        f"Also [[{utc.id[:8]}]] and [[{name(tz.path)[:-3]}]].",
    )
    out = proj.show(notes.id)
    assert [(link.relation, link.id) for link in out.links] == [
        ("links_to", utc.id),
        ("links_to", tz.id),
        ("links_to", utc.id),
        ("links_to", tz.id),
    ]
    assert by_title(proj.show(utc.id).backlinks) == {"Date handling notes": "linked_from"}
    assert by_title(proj.show(tz.id).backlinks) == {"Date handling notes": "linked_from"}
    assert proj.show(utc.id).links == []


def test_typed_relations_read_from_both_sides(proj):
    old = add(proj, "Old timeout policy", "Timeouts are 30 s everywhere.", type="decision")
    new = add(
        proj,
        "New timeout policy",
        "Timeouts are 5 s, retry once.\n\n## Relations\n- supersedes [[Old timeout policy]]\n",
        type="decision",
    )
    dep = add(proj, "Retry helper", "The retry helper lives in net/retry.py.")
    proj.edit(new.id, [Edit("relate", relation="depends on", value=dep.id)])
    assert by_title(proj.show(new.id).links) == {
        "Old timeout policy": "supersedes",
        "Retry helper": "depends_on",
    }
    assert by_title(proj.show(old.id).backlinks) == {"New timeout policy": "superseded_by"}
    assert by_title(proj.show(dep.id).backlinks) == {"New timeout policy": "required_by"}
    assert "depends_on: " + dep.id in text(proj, new.path)


def test_a_link_to_a_memory_added_later_resolves_without_reindexing_the_source(proj):
    src = add(proj, "Deploy checklist", "Before deploying read [[Rollback plan]].")
    assert proj.show(src.id).links[0].id is None
    later = add(proj, "Rollback plan", "Roll back by re-deploying the previous tag.")
    assert proj.show(src.id).links[0].id == later.id
    assert by_title(proj.show(later.id).backlinks) == {"Deploy checklist": "linked_from"}


# -- renames and retitles --------------------------------------------------------------------------


def test_mv_rewrites_path_and_file_name_links_and_the_moved_files_own_links(proj):
    target = add(proj, "Store times in UTC", "Every timestamp is stored in UTC.")
    other = add(proj, "Logging format", "Logs are JSON lines.")
    stem = name(target.path)[:-3]
    src = add(
        proj,
        "Date handling notes",
        f"Read [the rule]({name(target.path)}#why) and [[{stem}|this]] and [[Store times in UTC]].\n"
        f"Keep `[[{stem}]]` as code.",
    )
    mover = add(proj, "Index of notes", f"See [logs]({name(other.path)}).")
    untouched = text(proj, other.path)

    moved = proj.move(target.id, "time/utc")
    assert moved.path == ".lore/memory/time/utc.md" and moved.moved_from == target.path
    assert moved.links_updated == [src.path]
    body = text(proj, src.path)
    assert "[the rule](time/utc.md#why)" in body and "[[utc|this]]" in body
    assert "[[Store times in UTC]]" in body  # a title link needs no change
    assert f"`[[{stem}]]`" in body  # code is left alone
    assert text(proj, other.path) == untouched
    assert by_title(proj.show(target.id).backlinks) == {"Date handling notes": "linked_from"}
    assert not (proj.project.root / target.path).exists()

    # The moved file's own relative links keep pointing at the same memory.
    proj.move(mover.id, "indexes/")
    assert f"[logs](../{name(other.path)})" in text(proj, ".lore/memory/indexes/" + name(mover.path))
    assert [link.id for link in proj.show(mover.id).links] == [other.id]
    assert proj.doctor() == []


def test_retitling_rewrites_title_links_in_body_and_frontmatter(proj):
    target = add(proj, "Old name", "The thing that gets renamed.")
    body_link = add(proj, "Body linker", "Depends on [[Old name]] and [[old  NAME|alias]].")
    front = add(proj, "Front linker", "Relations in the frontmatter.")
    proj.edit(front.id, [Edit("relate", relation="supersedes", value="Old name")])

    result = proj.edit(target.id, [Edit("set", field="title", value="New name")])
    assert sorted(result.links_updated) == sorted([body_link.path, front.path])
    assert "[[New name]] and [[New name|alias]]" in text(proj, body_link.path)
    assert "supersedes: New name" in text(proj, front.path)
    assert by_title(proj.show(target.id).backlinks) == {
        "Body linker": "linked_from",
        "Front linker": "superseded_by",
    }
    assert [p for p in proj.doctor() if "link" in p.message] == []


def test_update_with_a_new_title_follows_links_too(proj):
    target = add(proj, "Cache policy", "Cache for five minutes.")
    src = add(proj, "Perf notes", "See [[Cache policy]].")
    proj.update(target.id, title="Caching rules")
    assert "[[Caching rules]]" in text(proj, src.path)


def test_hand_edit_of_the_title_follows_links_and_fixes_the_hash(tmp_path, proj):
    target = add(proj, "Queue names", "Queues are named after their consumer.")
    src = add(proj, "Worker notes", "Start with [[Queue names]].")
    script = tmp_path / "ed.py"
    script.write_text(
        "import sys, pathlib\n"
        "p = pathlib.Path(sys.argv[1])\n"
        "t = p.read_text().replace('subject: Queue names', 'subject: Queue naming')\n"
        "p.write_text(t.replace('their consumer.', 'their consumer, always.'))\n"
    )
    cli = CLI(proj.project.root)
    import sys

    out = cli("edit", target.id[:8], env={"EDITOR": f"{sys.executable} {script}"})
    assert "updated links in 1 other memory" in out.stdout and src.path in out.stdout
    assert "[[Queue naming]]" in text(proj, src.path)
    assert "content_hash" not in cli("doctor").stdout  # the hash follows the hand edit


# -- broken links ------------------------------------------------------------------------------------


def test_doctor_reports_broken_links_with_what_to_do(proj):
    add(
        proj,
        "Lonely",
        "Points at [[Nothing here]] and [gone](gone.md).\n\n## Relations\n- supersedes: deadbeef",
    )
    problems = [p for p in proj.doctor() if "link" in p.message]
    assert len(problems) == 3
    assert all(p.level == "warning" and "names no memory" in p.message for p in problems)
    first_line = (
        text(proj, problems[0].where.split(":")[0])
        .splitlines()
        .index("Points at [[Nothing here]] and [gone](gone.md).")
    )
    assert any("[[Nothing here]]" in p.message and p.where.endswith(f":{first_line + 1}") for p in problems)
    assert any("(gone.md)" in p.message for p in problems)
    assert any("(supersedes)" in p.message for p in problems)


def test_a_link_to_itself_is_neither_broken_nor_an_edge(proj):
    """`[[its own title]]` names a memory (the one it is written in): doctor,
    show and graph don't call it a link that "names no memory"."""
    me = add(proj, "Retry policy", "See [[Retry policy]] below, and [[Backoff]].")
    other = add(proj, "Backoff", "Exponential, capped at 30 s.")
    assert [p for p in proj.doctor() if "link" in p.message] == []
    shown = proj.show(me.id).links
    assert [(link.title, link.direction) for link in shown] == [("Backoff", "out")]
    graph = proj.graph(me.id, depth=1)
    assert graph.broken == [] and {n.id for n in graph.nodes} == {me.id, other.id}
    assert [(e.source, e.target) for e in graph.edges] == [(me.id, other.id)]


def test_removing_a_memory_breaks_its_links_and_restoring_mends_them(proj):
    target = add(proj, "Target", "The memory others link to.")
    add(proj, "Source", "Links to [[Target]].")
    proj.remove(target.id)
    assert [p.message for p in proj.doctor() if "[[Target]]" in p.message]
    proj.restore(target.id)
    assert [p for p in proj.doctor() if "link" in p.message] == []


# -- privacy ----------------------------------------------------------------------------------------------


def test_links_never_reveal_another_agents_private_memory(tmp_path):
    root = tmp_path / "proj"
    lore.init(root).close()
    configure(root)
    with lore.open(root, agent="alice") as alice:
        secret = alice.add(
            title="Alice secret plan", body="Only Alice knows this plan.", tags=["x"], private=True
        )
        alice.add(title="Alice private notes", body="Builds on [[Shared design]].", tags=["x"], private=True)
    with lore.open(root, agent="bob") as bob:
        shared = bob.add(
            title="Shared design",
            body=f"See [[Alice secret plan]] and [[{secret.id[:8]}]].",
            tags=["x"],
        )
        page = bob.show(shared.id)
        assert [link.id for link in page.links] == [None, None]  # as if nothing were there
        assert page.backlinks == []  # Alice's private note is invisible
        graph = bob.graph(shared.id, depth=3)
        assert [n.id for n in graph.nodes] == [shared.id]
    with lore.open(root, agent="alice") as alice:
        assert by_title(alice.show(shared.id).backlinks) == {"Alice private notes": "linked_from"}
        assert [link.id for link in alice.show(shared.id).links] == [secret.id, secret.id]


# -- graph and show through the CLI ---------------------------------------------------------------------


class CLI:
    def __init__(self, root: Path):
        self.root = root

    def __call__(self, *args, env=None, ok=True):
        import os
        import subprocess
        import sys

        proc = subprocess.run(
            [sys.executable, "-m", "lore", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            env={**os.environ, "NO_COLOR": "1", **(env or {})},
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        assert not ok or proc.returncode == 0, proc.stderr
        return proc


def test_graph_walks_relations_to_the_depth_asked(proj):
    a = add(proj, "A decision", "First.\n\n## Relations\n- depends_on [[B fact]]")
    b = add(proj, "B fact", "Second, links to [[C gotcha]].")
    c = add(proj, "C gotcha", "Third memory in the chain.")
    add(proj, "Unrelated", "Nothing to do with the others.")
    cli = CLI(proj.project.root)
    one = json.loads(cli("graph", a.id[:8], "--json").stdout)
    assert [(n["title"], n["depth"]) for n in one["nodes"]] == [("A decision", 0), ("B fact", 1)]
    assert one["edges"] == [{"source": a.id, "target": b.id, "relation": "depends_on"}]
    two = json.loads(cli("graph", c.id[:8], "--depth", "2", "--json").stdout)
    assert [(n["title"], n["depth"]) for n in two["nodes"]] == [
        ("C gotcha", 0),
        ("B fact", 1),
        ("A decision", 2),
    ]
    human = cli("graph", a.id[:8], "--depth", "2").stdout
    assert "A decision" in human and "→ depends on: B fact" in human and "C gotcha" in human
    shown = json.loads(cli("show", b.id[:8], "--json").stdout)
    assert [link["title"] for link in shown["backlinks"]] == ["A decision"]
    assert shown["backlinks"][0]["relation"] == "required_by"
    assert [link["title"] for link in shown["links"]] == ["C gotcha"]


# -- recall follows supersedes -------------------------------------------------------------------------


def test_recall_reads_every_memory_for_links_only_when_there_are_links(proj):
    """The link resolver reads every visible memory: recall must not build it for
    memories that link to nothing (it cost ~0.3 s a cold call at 15k memories)."""
    add(proj, "Invoice rounding rule", "Round each invoice line to the cent, half up.")
    add(proj, "Money type", "Amounts are stored as integers, never floats.")
    pack = proj.recall("invoice rounding", include_code=False, include_related_work=False)
    assert pack.to_dict()["memories"]
    assert proj.memories.graph._resolver is None


def test_recall_shows_the_superseding_memory_instead_of_the_superseded_one(proj):
    old = add(proj, "Invoice rounding rule", "Round each invoice line to the cent, half up.", type="decision")
    new = add(
        proj,
        "Banker's rounding for invoices",
        "Totals use banker's rounding since the audit.\n\n## Relations\n- supersedes [[Invoice rounding rule]]",
        type="decision",
    )
    dep = add(proj, "Money type", "Amounts are stored as integers, never floats.")
    proj.edit(new.id, [Edit("relate", relation="depends_on", value="Money type")])
    pack = proj.recall("invoice rounding rule cent half up", include_code=False, include_related_work=False)
    memories = pack.to_dict()["memories"]
    ids = [m["id"] for m in memories]
    assert old.id not in ids and new.id in ids
    top = next(m for m in memories if m["id"] == new.id)
    assert top["supersedes"] == [{"id": old.id, "title": "Invoice rounding rule"}]
    assert 'supersedes "Invoice rounding rule"' in pack.markdown
    assert dep.id in ids and next(m for m in memories if m["id"] == dep.id)["via"]["relation"] == "depends_on"


# -- relation typos ------------------------------------------------------------------------------------


@pytest.mark.storage_independent
@pytest.mark.parametrize(
    ("written", "known"),
    [
        ("supercedes", "supersedes"),
        ("superseeds", "supersedes"),
        ("Superseded", "supersedes"),
        ("depend_on", "depends_on"),
        ("depend on", "depends_on"),
        ("depends", "depends_on"),
        ("implement", "implements"),
        ("implemented", "implements"),
        ("related", "relates_to"),
        ("related to", "relates_to"),
        ("contradict", "contradicts"),
        ("superceded_by", "supersedes"),  # a misspelt backlink name
        ("implemnted_by", "implements"),
    ],
)
def test_a_near_miss_of_a_known_relation_is_a_typo(written, known):
    assert near_miss(relation_name(written)) == known


@pytest.mark.storage_independent
@pytest.mark.parametrize("written", ["superseded", "Superseded", "superceded_by", "implemented"])
def test_a_typo_that_reads_from_the_other_side_is_not_advised_as_is(written):
    """`superseded: X` means "X supersedes this one": following "did you mean
    supersedes?" would turn the link around and hide the newer memory."""
    name = relation_name(written)
    message = typo_message(name, near_miss(name))
    assert "did you mean" not in message and "on the other memory, pointing to this one" in message


@pytest.mark.storage_independent
@pytest.mark.parametrize(
    "written",
    [
        *("supersedes", "relates to", "depends_on", "contradicts", "implements"),  # known
        *("blocks", "extends", "replaces", "contrasts", "see also", "derived_from", "relies_on"),  # custom
        *("superseded_by", "required_by", "implemented_by", "links_to"),  # Lore's own words
    ],
)
def test_known_relations_and_words_of_their_own_are_no_typos(written):
    assert near_miss(relation_name(written)) is None


def test_a_relation_typo_is_refused_on_every_write_path(proj):
    """`relate`, `set relations=...`, a new memory's or a new body's
    ``## Relations`` section: a near miss is refused with what was meant, and
    nothing is written; a custom name far from every known one is kept."""
    old = add(proj, "Old timeout", "Timeouts are 30 s.")
    new = add(proj, "New timeout", "Timeouts are 5 s.")
    path = proj.project.root / new.path
    before = path.read_bytes()
    refused = [
        lambda: proj.edit(new.id, [Edit("relate", relation="supercedes", value=old.id)]),
        lambda: proj.edit(new.id, [Edit("set", field="relations", value="{depend_on: Old timeout}")]),
        lambda: proj.edit(new.id, [Edit("append", text="## Relations\n- implement [[Old timeout]]")]),
        lambda: proj.update(new.id, body="Timeouts are 5 s.\n\n## Relations\n- superseeds [[Old timeout]]"),
    ]
    for write in refused:
        with pytest.raises(UsageError, match=r"did you mean (supersedes|depends_on|implements)\?") as err:
            write()
        assert "custom relation names are allowed" in str(err.value) and "\n" not in str(err.value)
    assert path.read_bytes() == before
    with pytest.raises(UsageError) as err:
        add(proj, "Third", "Text.\n\n## Relations\n- supercedes [[Old timeout]]")
    assert str(err.value).startswith("relation 'supercedes' is not one Lore knows: did you mean supersedes?")
    assert len(proj.list()) == 2

    proj.edit(new.id, [Edit("relate", relation="blocks", value=old.id)])
    proj.edit(new.id, [Edit("relate", relation="Supersedes", value=old.id)])
    assert {(link.relation, link.title) for link in proj.show(new.id).links} == {
        ("blocks", "Old timeout"),
        ("supersedes", "Old timeout"),
    }
    assert proj.memories.graph.superseded_by([old.id])[old.id].id == new.id


def test_cli_relate_typo_is_a_usage_error_naming_the_known_relation(cli):
    old = cli.json("add", "-t", "Old timeout", "-b", "Timeouts are 30 s.")
    new = cli.json("add", "-t", "New timeout", "-b", "Timeouts are 5 s.")
    path = cli.cwd / new["path"]
    before = path.read_bytes()
    proc = cli("edit", new["id"][:8], "--relate", f"supercedes={old['id'][:8]}", ok=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "lore: error: relation 'supercedes' is not one Lore knows: did you mean supersedes? "
        "(custom relation names are allowed when they are not this close to a known one)"
    ]
    assert path.read_bytes() == before
    cli("edit", new["id"][:8], "--relate", f"blocks={old['id'][:8]}")
    assert f"blocks: {old['id']}" in path.read_text()


HAND_TYPOS = """\
---
id: 11111111-2222-4333-8444-555555555555
subject: Hand written
keywords: [hand]
occurred_at: 2026-02-10T15:30:00Z
relations:
  supercedes: Old timeout
  blocks: Old timeout
---

Written by hand.

## Relations
- depend on [[Old timeout]]
- implements [[Old timeout]]
"""


def test_doctor_reports_relation_typos_written_by_hand(cli):
    """A typo written by hand is stored (the file is the truth) but doctor warns,
    naming the file and the word; other writes to that memory still work."""
    cli("add", "-t", "Old timeout", "-b", "Timeouts are 30 s.")
    path = cli.cwd / ".lore/memory/hand.md"
    path.write_text(HAND_TYPOS)
    problems = [p for p in cli.json("doctor") if "relation" in p["message"]]
    line = HAND_TYPOS.splitlines().index("- depend on [[Old timeout]]") + 1
    assert problems == [
        {
            "level": "warning",
            "where": ".lore/memory/hand.md",
            "message": "relation 'supercedes' looks like a typo: did you mean supersedes? Lore acts only "
            "on the relations it knows (a custom name further from them is fine)",
        },
        {
            "level": "warning",
            "where": f".lore/memory/hand.md:{line}",
            "message": "relation 'depend_on' looks like a typo: did you mean depends_on? Lore acts only "
            "on the relations it knows (a custom name further from them is fine)",
        },
    ]
    assert cli("doctor").returncode == 0  # warnings only
    cli("edit", "hand", "--append", "Still true.")  # the typo was there already: not this write's
    edited = cli("edit", "hand", env={"EDITOR": "true", "VISUAL": ""})
    assert "relation 'supercedes' looks like a typo: did you mean supersedes?" in edited.stderr
