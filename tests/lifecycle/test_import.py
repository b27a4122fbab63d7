"""`lore import`: each layout, dates from git or the file, idempotence, dry-run, broken files."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime

import pytest
import yaml

import lore

from .conftest import memory_files, snapshot

AGENTS_MD = """\
# Project instructions

## Code style

- Format with black, line length 100.
- Type hints on every public function.

## Testing

Run `make test` before pushing; the integration tests need Docker.

## Architecture overview

The API lives in `api/`, the workers in `workers/`; they share `core/`.

## Gotchas

- The staging database resets every night at 2am.

<!-- lore:begin -->
## Lore
Search project memory before exploring.
<!-- lore:end -->
"""

ADR_1 = """\
# 1. Record architecture decisions

Date: 2021-04-01

## Status

Accepted

## Context

We need to record the architectural decisions made on this project.

## Decision

We will use Architecture Decision Records, as described by Michael Nygard.
"""

ADR_2 = """\
# 2. Use MySQL

Date: 2021-05-10

## Status

Superseded by [3. Use Postgres](0003-use-postgres.md)

## Context

We need a relational database.

## Decision

We will use MySQL.
"""

CHATI = """\
---
id: mem-2026-02-12-001
type: procedural
agent: architect
tags: [authentication, jwt, pattern, validated]
confidence: 0.92
sector: procedural
tier: hot
access_count: 7
last_accessed: 2026-02-12T16:30:00Z
created_at: 2026-02-10T10:15:00Z
---

# Pattern: JWT Authentication in Next.js Projects

## Decision
JWT chosen for stateless API, with refresh token rotation.
"""

JARVIS = """\
---
id: mem_abc123
type: fact
tags: [user_preference, settings]
createdAt: 2024-01-01T00:00:00Z
---

User prefers dark mode and concise responses.
"""


def git(cwd, *args, date=None):
    env = dict(os.environ)
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


@pytest.fixture
def notes(tmp_path, git_env):
    """A folder of existing knowledge in every layout, some of it in git."""
    root = tmp_path / "knowledge"
    (root / "notes/sub").mkdir(parents=True)
    (root / "notes/plain.md").write_text(
        "# Staging deploys\n\nStaging deploys run from the release branch only.\n"
    )
    (root / "notes/sub/front.md").write_text(
        "---\ntitle: Cache keys\ndate: 2023-06-01\ntags: [cache, redis]\n---\n\nCache keys are prefixed with the tenant id.\n"
    )
    (root / "notes/tracked.md").write_text("Feature flags live in flags.yaml and are read at startup.\n")
    (root / "notes/untracked.md").write_text("The nightly job emails the on-call engineer on failure.\n")
    stamp = datetime(2022, 2, 2, 8, 0, tzinfo=UTC).timestamp()
    os.utime(root / "notes/untracked.md", (stamp, stamp))
    (root / "AGENTS.md").write_text(AGENTS_MD)
    (root / "docs/adr").mkdir(parents=True)
    (root / "docs/adr/0001-record-architecture-decisions.md").write_text(ADR_1)
    (root / "docs/adr/0002-use-mysql.md").write_text(ADR_2)
    (root / ".chati/memories/shared/durable").mkdir(parents=True)
    (root / ".chati/memories/architect/daily").mkdir(parents=True)
    (root / ".chati/memories/shared/durable/jwt.md").write_text(CHATI)
    (root / ".chati/memories/architect/daily/note.md").write_text(
        "---\nid: mem-2026-02-13-002\ntype: episodic\ncreated_at: 2026-02-13T09:00:00Z\n---\n\n"
        "Reviewed the auth flow with the team today.\n"
    )
    (root / ".chati/memories/index.json").write_text("{}")
    (root / "memory").mkdir()
    (root / "memory/mem_abc123.md").write_text(JARVIS)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "notes/tracked.md")
    git(root, "commit", "-qm", "flags", date="2020-07-15T10:00:00+00:00")
    return root


def by_source(report):
    return {item["source"]: item for item in report["items"]}


def test_import_every_layout(proj, notes, cli_in):
    root = proj.project.root
    report = cli_in(root, "import", str(notes), "--json")
    assert report["problems"] == [] and report["existing"] == 0
    items = by_source(report)
    assert items["notes/plain.md"]["title"] == "Staging deploys"
    assert (items["AGENTS.md#code_style"]["type"], items["AGENTS.md#testing"]["type"]) == (
        "convention",
        "pattern",
    )
    assert items["AGENTS.md#architecture_overview"]["type"] == "architecture"
    assert items["AGENTS.md#gotchas"]["type"] == "gotcha"
    assert not any(s.split("#")[-1] == "lore" for s in items), "Lore's own block is not imported"
    assert items["docs/adr/0001-record-architecture-decisions.md"]["type"] == "decision"
    assert items["docs/adr/0001-record-architecture-decisions.md"]["title"] == "Record architecture decisions"
    assert items[".chati/memories/shared/durable/jwt.md"]["id"] == "mem-2026-02-12-001"
    assert items[".chati/memories/architect/daily/note.md"]["tier"] == "daily"
    assert items["memory/mem_abc123.md"]["id"] == "mem_abc123"
    assert report["created"] == len(report["items"]) == 13, " ".join(sorted(items))

    def meta(item):
        return yaml.safe_load((root / item["path"]).read_text().split("---\n", 2)[1])

    assert str(meta(items["notes/sub/front.md"])["occurred_at"]).startswith("2023-06-01")
    assert str(meta(items["notes/tracked.md"])["occurred_at"]).startswith("2020-07-15")  # from git
    assert str(meta(items["notes/untracked.md"])["occurred_at"]).startswith("2022-02-02")  # file time
    adr1 = meta(items["docs/adr/0001-record-architecture-decisions.md"])
    assert str(adr1["occurred_at"]).startswith("2021-04-01") and "accepted" in adr1["labels"]
    assert "3. Use Postgres" in meta(items["docs/adr/0002-use-mysql.md"])["superseded_by"]
    jwt = meta(items[".chati/memories/shared/durable/jwt.md"])
    assert jwt["type"] == "pattern" and jwt["confidence"] == 0.92 and jwt["access_count"] == 7
    assert items[".chati/memories/shared/durable/jwt.md"]["path"].startswith(".lore/memory/")
    assert items[".chati/memories/architect/daily/note.md"]["path"].startswith(".lore/local/architect/daily/")
    assert meta(items["AGENTS.md#code_style"])["imported_from"] == "AGENTS.md#code_style"

    # Found by search; the private daily note only by its agent; the superseded ADR only when archived asked.
    assert cli_in(root, "search", "tenant id cache keys", "--json")[0]["title"] == "Cache keys"
    private = items[".chati/memories/architect/daily/note.md"]["id"]
    assert private not in [h["id"] for h in cli_in(root, "search", "reviewed auth flow", "--json")]
    assert private in [
        h["id"] for h in cli_in(root, "search", "reviewed auth flow", "--agent", "architect", "--json")
    ]
    mysql = items["docs/adr/0002-use-mysql.md"]["id"]
    assert mysql not in [h["id"] for h in cli_in(root, "search", "MySQL relational database", "--json")]
    archived = cli_in(root, "search", "MySQL relational database", "--include-archived", "--json")
    assert mysql in [h["id"] for h in archived]
    # An ADR is summed up by its decision, not by its "Date: ..." line.
    adr = items["docs/adr/0001-record-architecture-decisions.md"]["id"]
    [listed] = [m for m in cli_in(root, "list", "--json") if m["id"] == adr]
    assert listed["summary"].startswith("We will use Architecture Decision Records")


def test_a_second_import_changes_nothing(proj, notes, cli_in):
    root = proj.project.root
    cli_in(root, "import", str(notes), "--json")
    before = snapshot(root)
    again = cli_in(root, "import", str(notes), "--json")
    assert again["created"] == 0 and again["existing"] == len(again["items"]) == 13
    assert snapshot(root) == before


def test_a_section_changed_at_its_source_is_reported_not_said_to_be_there(proj, tmp_path, cli_in):
    """Re-importing an AGENTS.md whose section changed said "exists", and the
    memory kept the old text without a word. A memory edited here while its
    source stayed the same is there, as before."""
    root = proj.project.root
    agents = tmp_path / "AGENTS.md"
    agents.write_text("# Agents\n\n## Style\n\nLines are 100 columns.\n\n## Testing\n\nRun pytest -q.\n")
    first = by_source(cli_in(root, "import", str(agents), "--json"))
    testing = first["AGENTS.md#testing"]["id"]
    cli_in(root, "edit", testing[:8], "--append", "Also run ruff.", raw=True)
    agents.write_text(agents.read_text().replace("100 columns", "120 columns"))
    before = snapshot(root)
    again = cli_in(root, "import", str(agents), "--json")
    assert {k: v["status"] for k, v in by_source(again).items()} == {
        "AGENTS.md#style": "changed",
        "AGENTS.md#testing": "exists",
    }
    assert again["changed"] == 1 and again["existing"] == 1
    [problem] = again["problems"]
    style = first["AGENTS.md#style"]["id"]
    assert (
        problem.startswith("AGENTS.md#style changed since it was imported")
        and f"lore edit {style[:8]}" in problem
    )
    assert snapshot(root) == before  # nothing overwritten
    text = cli_in(root, "import", str(agents), raw=True).stdout
    assert "1 already there, 1 changed at the source, 0 skipped" in text


def test_same_named_notes_of_two_folders_of_the_project_are_two_sources(proj, cli_in):
    """A monorepo's services/api/AGENTS.md and services/web/AGENTS.md, imported
    one at a time: both were known as "AGENTS.md", so the second was reported
    as a changed version of the first (with advice to remove the first)."""
    root = proj.project.root
    for name, words in (
        ("api", "make test-api and a local postgres"),
        ("web", "npm test in headless chrome"),
    ):
        (root / "services" / name).mkdir(parents=True)
        (root / "services" / name / "AGENTS.md").write_text(
            f"# {name}\n\n## Testing\nRun the tests with {words}.\n"
        )
    first = cli_in(root, "import", "services/api/AGENTS.md", "--json")
    second = cli_in(root, "import", str(root / "services/web/AGENTS.md"), "--json")
    assert [i["status"] for i in first["items"] + second["items"]] == ["created", "created"]
    assert [i["source"] for i in first["items"] + second["items"]] == [
        "services/api/AGENTS.md#testing",
        "services/web/AGENTS.md#testing",
    ]
    assert cli_in(root, "import", "services", "--json")["created"] == 0  # the same sources, by folder


def test_dry_run_lists_and_writes_nothing(proj, notes, cli_in):
    root = proj.project.root
    before = snapshot(root)
    report = cli_in(root, "import", str(notes), "--dry-run", "--json")
    assert report["dry_run"] and report["created"] == 13
    assert {item["status"] for item in report["items"]} == {"would-create"}
    assert all(item["path"] is None for item in report["items"])
    assert snapshot(root) == before and memory_files(root, ".lore/memory") == []
    text = cli_in(root, "import", str(notes), "--dry-run", raw=True).stdout
    assert "would-create" in text and "Staging deploys" in text and "would create 13" in text


def test_broken_files_are_reported_in_one_line_and_skipped(proj, tmp_path, cli_in):
    root = proj.project.root
    folder = tmp_path / "messy"
    folder.mkdir()
    (folder / "good.md").write_text("Releases are tagged vX.Y.Z on the main branch.\n")
    (folder / "bad-yaml.md").write_text("---\ntitle: [unclosed\n---\n\nBody text here.\n")
    (folder / "binary.md").write_bytes(b"\x00\x01\x02binary")
    (folder / "latin1.md").write_bytes("Caf\xe9 opens at nine.\n".encode("latin-1"))
    (folder / "empty.md").write_text("---\ntitle: Nothing\n---\n")
    secret = tmp_path / "secret.md"
    secret.write_text("The production password is hunter2, keep it safe.\n")
    (folder / "link.md").symlink_to(secret)
    # Dated in 2099: `lore add` and captures refuse it (it would never grow old); import took it.
    (folder / "future.md").write_text("---\noccurred_at: 2099-01-01\n---\nA note from the far future.\n")
    proc = cli_in(root, "import", str(folder), raw=True)
    problems = [line for line in proc.stderr.splitlines() if line.startswith("lore: skipped")]
    assert len(problems) == 6, proc.stderr
    assert all("\n" not in p for p in problems) and "Traceback" not in proc.stderr
    assert any("link.md" in p and "outside" in p for p in problems)
    assert any("future.md" in p and "occurred_at" in p and "in the future" in p for p in problems)
    assert "created 1," in proc.stdout
    assert not any("hunter2" in p.read_text() for p in memory_files(root, ".lore"))


def test_import_of_a_single_instructions_file_and_of_nothing(proj, notes, cli_in):
    root = proj.project.root
    report = cli_in(root, "import", str(notes / "AGENTS.md"), "--tier", "daily", "--json")
    assert len(report["items"]) == 4 and {i["tier"] for i in report["items"]} == {"daily"}
    assert all(i["path"].startswith(".lore/local/daily/") for i in report["items"])
    proc = cli_in(root, "import", str(notes / "missing"), ok=False)
    assert proc.returncode != 0 and "nothing at" in proc.stderr
    proc = cli_in(root, "import", ".lore", ok=False)
    assert proc.returncode != 0 and "Lore's own folder" in proc.stderr


def test_a_file_of_the_project_that_links_out_of_it_is_not_imported(proj, tmp_path, cli_in):
    """A cloned repository's AGENTS.md -> ~/.aws/credentials would copy that file
    into a committed memory; naming the outside file itself is still an import."""
    root = proj.project.root
    outside = tmp_path / "credentials.md"
    outside.write_text("# Credentials\n\nThe shadow line root:x:20228:0:99999 lives here.\n")
    (root / "AGENTS.md").symlink_to(outside)
    (root / "docs").symlink_to(tmp_path, target_is_directory=True)
    for named in ("AGENTS.md", "docs/credentials.md", "docs"):
        proc = cli_in(root, "import", named, ok=False)
        assert proc.returncode == 2 and "outside the project" in proc.stderr, proc.stderr
    assert not memory_files(root, ".lore")
    assert cli_in(root, "import", str(outside), "--dry-run", "--json")["items"]


def test_secrets_in_any_frontmatter_field_are_redacted_before_the_file_is_written(proj, tmp_path, cli_in):
    root = proj.project.root
    token, aws = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789", "AKIA" + "IOSFODNN7EXAMPLE"
    folder = tmp_path / "secrets"
    folder.mkdir()
    (folder / f"{token}.md").write_text(
        "---\ntitle: Deploy notes\ntags: [deploy]\n"
        f"summary: pushes with {token}\nlabels: [{token}]\ntask: {aws}\n"
        f"files: [src/{token}.py]\ndeploy:\n  key: {aws}\n  {token}: yes\n"
        "---\nDeploy with the token.\n"
    )
    report = cli_in(root, "import", str(folder), "--json")
    assert report["created"] == 1, report
    written = [p for p in root.joinpath(".lore").rglob("*") if p.is_file() and p.suffix == ".md"]
    assert written and all(token not in p.as_posix() and aws not in p.as_posix() for p in written)
    text = (root / report["items"][0]["path"]).read_text()
    assert token not in text and aws not in text, text
    assert "[REDACTED:github-token]" in text and "[REDACTED:aws-access-key]" in text
    assert not any(token in p.read_text() or aws in p.read_text() for p in written)
    # The report names the note's file, and reaches terminals and transcripts: redacted too.
    assert token not in str(report) and "[REDACTED:github-token]" in report["items"][0]["source"]
    again = cli_in(root, "import", str(folder), raw=True)  # idempotent: "exists", named the same way
    assert "exists" in again.stdout and token not in again.stdout + again.stderr


def test_a_secret_in_a_section_heading_is_not_kept_lower_cased_in_imported_from(proj, tmp_path, cli_in):
    """An instructions file's section is named by a slug of its heading, which
    lower-cases it: a token there (AIza…, AKIA…) would no longer be recognised as one."""
    root = proj.project.root
    google, aws = "AIza" + "Utp055p4UXWfHThDSEa0BZIBAsWan8wLSv5", "AKIA" + "Q7ZK4M2P9X3N8W5R"
    folder = tmp_path / "guide"
    folder.mkdir()
    (folder / "AGENTS.md").write_text(
        f"# Guide\n\n## Maps key {google}\n\nRotate it every quarter, never commit it.\n\n"
        f"## Keys {aws}\n\nAsk the platform team for access first.\n"
    )
    report = cli_in(root, "import", str(folder / "AGENTS.md"), "--json")
    assert report["created"] == 2, report
    assert {item["source"] for item in report["items"]} == {
        "AGENTS.md#maps_key_redacted_google_api_key",
        "AGENTS.md#keys_redacted_aws_access_key",
    }
    for path in memory_files(root, ".lore"):
        text = path.read_text().casefold()
        assert google.casefold() not in text and aws.casefold() not in text, text
    assert cli_in(root, "import", str(folder / "AGENTS.md"), "--json")["created"] == 0


def test_paths_leaving_the_project_are_refused_as_add_refuses_them(proj, tmp_path, cli_in):
    root = proj.project.root
    folder = tmp_path / "paths"
    folder.mkdir()
    (folder / "scope.md").write_text("---\ntitle: Scope\napplies_to: file:../../etc/passwd\n---\nScoped.\n")
    (folder / "files.md").write_text("---\ntitle: Files\nfiles: [/etc/passwd]\n---\nAbout a file.\n")
    (folder / "fine.md").write_text("---\ntitle: Fine\nfiles: [src/app.py]\n---\nAbout the app.\n")
    proc = cli_in(root, "import", str(folder), raw=True)
    problems = [line for line in proc.stderr.splitlines() if line.startswith("lore: skipped")]
    assert len(problems) == 2 and all("not a path inside the project" in p for p in problems), proc.stderr
    assert "created 1," in proc.stdout
    assert not any("/etc/passwd" in p.read_text() for p in memory_files(root, ".lore"))


def test_an_imported_adr_imported_again_from_another_projects_memory_keeps_its_labels_once(
    proj, tmp_path, cli_in
):
    """A team member's `.lore/memory` holding imported ADRs, imported here: each
    file is an ADR again (its `## Status`), and its labels were doubled
    (`[adr, accepted, adr, accepted]`)."""
    other = lore.init(tmp_path / "other")
    (tmp_path / "adr").mkdir()
    (tmp_path / "adr/0001-record-architecture-decisions.md").write_text(ADR_1)
    assert cli_in(other.project.root, "import", str(tmp_path / "adr"), "--json")["created"] == 1
    other.close()
    report = cli_in(proj.project.root, "import", str(tmp_path / "other/.lore/memory"), "--json")
    (item,) = report["items"]
    assert item["layout"] == "adr" and item["status"] == "created"
    path = proj.project.root / item["path"]
    labels = yaml.safe_load(path.read_text().split("---")[1])["labels"]
    assert labels == ["adr", "accepted"]


ADR_3 = """\
# 3. Use Postgres

Date: 2021-06-10

## Status

Accepted. Supersedes [2. Use MySQL](0002-use-mysql.md).

## Decision

We will use Postgres.

```
[a link in code](0002-use-mysql.md) stays as written
```
"""


def test_links_between_imported_adrs_name_the_memories_they_became(proj, tmp_path, cli_in):
    """Links between ADRs stayed relative to their folder: broken once the
    memories lived in .lore/memory/ (doctor warned right after the import), and
    `superseded_by` held the link's text, so nothing was superseded."""
    root = proj.project.root
    adr = tmp_path / "adr"
    adr.mkdir()
    (adr / "0002-use-mysql.md").write_text(ADR_2)
    (adr / "0003-use-postgres.md").write_text(ADR_3)
    items = by_source(cli_in(root, "import", str(adr), "--json"))
    mysql, postgres = items["0002-use-mysql.md"], items["0003-use-postgres.md"]
    old = (root / mysql["path"]).read_text()
    assert f"superseded_by: {postgres['id']}" in old
    assert f"Superseded by [[{postgres['id']}|3. Use Postgres]]" in old
    new = (root / postgres["path"]).read_text()
    assert f"Supersedes [[{mysql['id']}|2. Use MySQL]]." in new
    assert "[a link in code](0002-use-mysql.md) stays as written" in new
    assert not [p for p in cli_in(root, "doctor", "--json") if "link" in p["message"]]
    again = cli_in(root, "import", str(adr), "--json")
    assert {i["status"] for i in again["items"]} == {"exists"}
    # The older decision gives way to the newer one.
    assert mysql["id"] not in [h["id"] for h in cli_in(root, "search", "relational database", "--json")]


def test_a_huge_file_in_an_adr_folder_is_skipped_without_being_read(proj, tmp_path):
    """Recognising an ADR reads a file's head only: a 1.5 GB (sparse) file is
    skipped by its size, in a process allowed 1 GB of memory."""
    import resource
    import sys

    adr = tmp_path / "huge" / "adr"
    adr.mkdir(parents=True)
    with open(adr / "0001-huge.md", "wb") as handle:
        handle.truncate(1500 * 1024 * 1024)

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1024**3, 1024**3))

    proc = subprocess.run(
        [sys.executable, "-m", "lore", "import", str(tmp_path / "huge")],
        cwd=proj.project.root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        preexec_fn=limited,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert (
        "over the 2097152-byte limit" in proc.stderr
        and "created 0, 0 already there, 1 skipped" in proc.stdout
    )


def test_a_note_whose_id_another_memory_has_is_skipped_saying_so(proj, tmp_path, cli_in):
    """Its own id names an unrelated memory: the note is not 'already there'
    (nothing of it would be imported, silently); an edited note imported
    again is still the memory it made the first time."""
    root = proj.project.root
    other = proj.add(title="Cache keys", body="Cache keys carry the tenant id.", tags=["cache"])
    folder = tmp_path / "clash"
    folder.mkdir()
    (folder / "clash.md").write_text(f"---\nid: {other.id}\ntitle: Deploys\n---\nDeploy from main only.\n")
    proc = cli_in(root, "import", str(folder), raw=True)
    assert "created 0, 0 already there, 1 skipped" in proc.stdout, proc.stdout
    assert f"its id {other.id} is another memory's ({other.path})" in proc.stderr
    own = "3f2a9c1e-0b1d-4c2e-8f3a-5b6c7d8e9f01"
    (folder / "clash.md").write_text(f"---\nid: {own}\ntitle: Deploys\n---\nDeploy from main only.\n")
    assert cli_in(root, "import", str(folder), "--json")["created"] == 1
    (folder / "clash.md").write_text(f"---\nid: {own}\ntitle: Deploys\n---\nDeploy from main, tagged.\n")
    again = cli_in(root, "import", str(folder), "--json")
    assert [(i["id"], i["status"]) for i in again["items"]] == [(own, "changed")]  # the same memory
    assert again["problems"][0].startswith("clash.md changed since it was imported")


def test_a_file_name_that_is_not_utf8_is_skipped_with_what_to_do(proj, tmp_path, cli_in):
    root = proj.project.root
    folder = tmp_path / "names"
    folder.mkdir()
    bad = os.fsencode(folder) + b"/caf\xe9.md"
    with open(bad, "w") as handle:
        handle.write("# Cafe\n\nOpens at nine every day.\n")
    (folder / "good.md").write_text("# Good\n\nReleases are tagged on main.\n")
    for named in (str(folder), os.fsdecode(bad)):
        proc = cli_in(root, "import", named, raw=True)
        assert "lore: skipped caf\\xe9.md: its name is not valid UTF-8; rename it" in proc.stderr, proc.stderr
        assert "surrogates" not in proc.stderr and "Traceback" not in proc.stderr
    files = memory_files(root, ".lore/memory")
    assert len(files) == 1 and files[0].name.endswith("good.md"), files
