"""Task memories at completion: bundles, the task's git changes, the rendered body (real repos)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lore.errors import UsageError
from lore.index.sections import split_sections
from lore.memory import markdown
from lore.memory.complete import (
    CompletionBundle,
    TaskChanges,
    load_bundle,
    mine_decisions,
    render_body,
    strip_task_id,
    task_changes,
)
from lore.memory.model import summarize

pytestmark = [
    pytest.mark.usefixtures("git_env"),
    pytest.mark.storage_independent,
]  # no index: CI's postgres pass may skip


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True)
    return result.stdout.strip()


def write(repo: Path, path: str, text: str) -> None:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def numbered(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i}\n" for i in range(1, n + 1))


# -- finding the task's commits ---------------------------------------------------


def test_task_commits_found_by_whole_word_id_newest_first(repo):
    write(repo, "base.txt", "base\n")
    commit(repo, "Initial import")
    subjects = [
        "jat-abc: add the parser",
        "Tidy up\n\nPart of jat-abc.",
        "[JAT-ABC] handle empty input",
        "Fix flaky test (jat-abc)",
        "jat-abcd: a different task",
        "jat-abc.1: a child task",
        "xjat-abc is not it either",
        "Unrelated work",
        "Refactor\n\nRefs: jat-abc",
    ]
    shas = {}
    for i, message in enumerate(subjects):
        write(repo, f"f{i}.txt", f"{i}\n")
        shas[message] = commit(repo, message)
    changes = task_changes(repo, "jat-abc")
    assert [c.subject for c in changes.commits] == [
        "Refactor",
        "Fix flaky test (jat-abc)",
        "[JAT-ABC] handle empty input",
        "Tidy up",
        "jat-abc: add the parser",
    ]
    assert changes.commits[0].sha == shas["Refactor\n\nRefs: jat-abc"]
    assert changes.files == ["f0.txt", "f1.txt", "f2.txt", "f3.txt", "f8.txt"]
    assert changes.task == "jat-abc"
    # max_commits keeps the newest
    assert [c.subject for c in task_changes(repo, "jat-abc", max_commits=2).commits] == [
        "Refactor",
        "Fix flaky test (jat-abc)",
    ]
    assert [c.subject for c in task_changes(repo, "JAT-ABCD").commits] == ["jat-abcd: a different task"]


def test_task_id_with_regex_characters_is_taken_literally(repo):
    write(repo, "a.txt", "a\n")
    commit(repo, "Initial")
    write(repo, "b.txt", "b\n")
    commit(repo, "proj+x.1a: literal id")
    write(repo, "c.txt", "c\n")
    commit(repo, "projjx11a: would match as a regex")
    assert [c.subject for c in task_changes(repo, "proj+x.1a").commits] == ["proj+x.1a: literal id"]


# -- files and first changed lines ----------------------------------------------------


def test_files_and_first_changed_lines_are_exact(repo):
    write(repo, "src/app.py", numbered(30))
    write(repo, "src/old.py", "obsolete\n")
    write(repo, "docs/guide.md", numbered(10))
    write(repo, "other.txt", numbered(5))
    commit(repo, "Initial import")

    app = numbered(30).splitlines(keepends=True)
    app[19] = "changed 20\n"
    app[24:24] = ["inserted a\n", "inserted b\n"]  # after line 24
    write(repo, "src/app.py", "".join(app))
    write(repo, "src/new.py", "one\ntwo\nthree\n")
    (repo / "src" / "old.py").unlink()
    commit(repo, "jat-abc: first part")

    write(repo, "other.txt", "someone else's change\n")
    commit(repo, "jat-xyz: another agent's work")

    guide = numbered(10).splitlines(keepends=True)
    guide[6] = "seven, edited\n"
    write(repo, "docs/guide.md", "".join(guide))
    app[4] = "changed 5\n"  # above the first part's change
    write(repo, "src/app.py", "".join(app))
    commit(repo, "jat-abc: second part")

    changes = task_changes(repo, "jat-abc")
    # most changed first; src/old.py was deleted; other.txt belongs to another task
    assert changes.files == ["src/app.py", "src/new.py", "docs/guide.md"]
    assert [(path, line) for path, line, _ in changes.key_files] == [
        ("src/app.py", 5),
        ("src/new.py", 1),
        ("docs/guide.md", 7),
    ]
    notes = {path: note for path, _, note in changes.key_files}
    assert notes["src/app.py"] == "+4 −2 lines"
    assert notes["src/new.py"] == "new file, +3 lines"
    assert notes["docs/guide.md"] == "+1 −1 lines"


def test_note_carries_function_context_and_renames(repo):
    code = "import os\n\n\ndef load(path):\n" + "".join(f"    x{i} = {i}\n" for i in range(10))
    write(repo, "pkg/loader.py", code)
    write(repo, "pkg/names.txt", numbered(20, "name"))
    commit(repo, "Initial import")
    write(repo, "pkg/loader.py", code.replace("x7 = 7", "x7 = 70"))
    git(repo, "mv", "pkg/names.txt", "pkg/renamed.txt")
    write(repo, "pkg/renamed.txt", numbered(20, "name") + "name 21\n")
    commit(repo, "jat-ctx: tweak loader")
    changes = task_changes(repo, "jat-ctx")
    assert changes.key_files == [
        ("pkg/loader.py", 12, "+1 −1 lines in `def load(path)`"),
        ("pkg/renamed.txt", 21, "renamed from pkg/names.txt, +1 line"),
    ]


def test_root_commit_is_diffed_against_the_empty_tree(repo):
    write(repo, "README.md", "hello\nworld\n")
    write(repo, "src/main.py", numbered(4))
    root_sha = commit(repo, "jat-root: bootstrap the project")
    write(repo, "src/main.py", numbered(4) + "line 5\n")
    commit(repo, "jat-root: one more line")
    changes = task_changes(repo, "jat-root")
    assert [c.sha for c in changes.commits][-1] == root_sha
    assert changes.commits[-1].parents == ()
    assert changes.key_files == [
        ("src/main.py", 1, "new file, +5 lines"),
        ("README.md", 1, "new file, +2 lines"),
    ]


def test_binary_and_unicode_paths(repo):
    write(repo, "a.txt", "a\n")
    commit(repo, "Initial")
    (repo / "img.bin").write_bytes(b"\0\1\2")
    write(repo, "docs/ñandú notes.md", "uno\n")
    commit(repo, "jat-bin: assets")
    changes = task_changes(repo, "jat-bin")
    assert changes.key_files == [
        ("docs/ñandú notes.md", 1, "new file, +1 line"),
        ("img.bin", None, "new binary file"),
    ]


def test_merge_diff_used_only_when_merges_are_all_that_name_the_task(repo):
    write(repo, "a.txt", "a\n")
    commit(repo, "Initial")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "feature.txt", "f\n")
    commit(repo, "Add feature")  # does not name the task
    git(repo, "checkout", "-q", "main")
    write(repo, "main.txt", "m\n")
    commit(repo, "Meanwhile on main")
    git(repo, "merge", "-q", "--no-ff", "feature", "-m", "Merge feature for jat-mrg")
    changes = task_changes(repo, "jat-mrg")
    assert [c.subject for c in changes.commits] == ["Merge feature for jat-mrg"]
    assert changes.files == ["feature.txt"]  # first-parent diff, not main.txt


# -- uncommitted work ---------------------------------------------------------------


def test_without_task_commits_the_work_tree_is_the_task(repo):
    write(repo, "tracked.py", numbered(10))
    write(repo, "doomed.txt", "bye\n")
    write(repo, "staged-back.txt", "same\n")
    write(repo, ".gitignore", "*.log\n")
    commit(repo, "Initial import")
    write(repo, "tracked.py", numbered(10).replace("line 3\n", "line three\n"))
    write(repo, "staged.txt", "a\nb\n")
    git(repo, "add", "staged.txt")
    write(repo, "untracked/new.md", "x\ny\nz\n")
    write(repo, "noise.log", "ignored\n")
    (repo / "doomed.txt").unlink()
    write(repo, "staged-back.txt", "different\n")
    git(repo, "add", "staged-back.txt")
    write(repo, "staged-back.txt", "same\n")  # staged, then changed back: no net change

    changes = task_changes(repo, "jat-wip")
    assert changes.commits == []
    assert changes.files == ["untracked/new.md", "staged.txt", "tracked.py"]
    assert changes.key_files == [
        ("untracked/new.md", 1, "new file, +3 lines"),
        ("staged.txt", 1, "new file, +2 lines"),
        ("tracked.py", 3, "+1 −1 lines"),
    ]
    body = render_body(CompletionBundle(), changes)
    assert "Uncommitted changes to 3 files" in body
    assert "- Changed `untracked/new.md`, `staged.txt`, `tracked.py` (uncommitted)" in body


def test_lores_own_files_are_never_a_tasks_key_files(repo):
    """An uncommitted .lore/ (config, memory files) is Lore's, not the task's work."""
    write(repo, "app.py", numbered(3))
    commit(repo, "Initial import")
    write(repo, "app.py", numbered(3).replace("line 2\n", "line two\n"))
    write(repo, ".lore/config.toml", "[index]\n")
    write(repo, ".lore/memory/2026-01-01-a-note.md", "---\nid: x\n---\nbody\n")
    write(repo, "sub/.lore/memory/b.md", "b\n")
    changes = task_changes(repo, "jat-lore")
    assert changes.files == ["app.py"]


def test_unborn_branch_and_clean_tree(repo):
    assert task_changes(repo, "jat-x") == TaskChanges(task="jat-x")
    write(repo, "first.txt", "1\n2\n")
    git(repo, "add", "first.txt")
    write(repo, "loose.txt", "1\n")
    changes = task_changes(repo, "jat-x")
    assert changes.key_files == [
        ("first.txt", 1, "new file, +2 lines"),
        ("loose.txt", 1, "new file, +1 line"),
    ]


def test_unborn_branch_of_a_sha256_repository(tmp_path):
    """The empty tree has another name where objects are named by SHA-256."""
    repo = tmp_path / "sha256"
    repo.mkdir()
    git(repo, "init", "-q", "--object-format=sha256")
    write(repo, "first.txt", "1\n2\n")
    git(repo, "add", "first.txt")
    changes = task_changes(repo, "jat-x")
    assert changes.key_files == [("first.txt", 1, "new file, +2 lines")]


def test_outside_git_and_bad_task(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert task_changes(plain, "jat-abc") == TaskChanges(task="jat-abc")
    with pytest.raises(UsageError, match="task"):
        task_changes(plain, "  ")
    with pytest.raises(UsageError, match="summary"):
        render_body(CompletionBundle(), TaskChanges(task="jat-abc"))


# -- decisions ------------------------------------------------------------------


def test_decisions_mined_from_commit_messages(repo):
    write(repo, "a.txt", "a\n")
    commit(repo, "Initial\n\nWe chose SQLite because it is embedded.")  # not the task
    commit(
        repo,
        "jat-dec: Use httpx instead of requests\n\n"
        "Decision: increased the timeout to 15s rather than adding\n"
        "retries. Retries would complicate error handling.\n\n"
        "- Bumped the version.\n"
        "- Prefer env vars over constants for timeouts.\n\n"
        "Signed-off-by: Ada <ada@example.com> rather than Bob\n"
        "Co-authored-by: Bob <bob@example.com> because reasons\n"
        "Refs: jat-dec because of the outage",
    )
    sha2 = git(repo, "rev-parse", "HEAD")[:7]
    commit(
        repo,
        "[jat-dec] Follow-up\n\n"
        "* use httpx instead of requests.\n"
        "Chose a 3-attempt limit; more made tests slow.",
    )
    sha3 = git(repo, "rev-parse", "HEAD")[:7]
    changes = task_changes(repo, "jat-dec")
    assert changes.decisions == [
        f"Use httpx instead of requests ({sha2})",
        f"Increased the timeout to 15s rather than adding retries. Retries would complicate "
        f"error handling ({sha2})",
        f"Prefer env vars over constants for timeouts ({sha2})",
        f"Chose a 3-attempt limit; more made tests slow ({sha3})",
    ]


def test_decisions_are_capped_and_long_ones_trimmed(repo):
    body = "\n\n".join(f"- Chose option {i} rather than option {i + 100}" for i in range(12))
    long = (
        "Some context sentence. " * 20 + "We decided to keep the old API because callers "
        "depend on it. It costs a little. " + "More context here. " * 20
    )
    commit(repo, f"jat-many: lots\n\n{long}\n\n{body}")
    decisions = task_changes(repo, "jat-many").decisions
    assert len(decisions) == 8
    assert decisions[0].startswith(
        "We decided to keep the old API because callers depend on it. It costs a little ("
    )
    assert decisions[1].startswith("Chose option 0 rather than option 100 (")
    assert mine_decisions([], "jat-many") == []


def test_strip_task_id():
    assert strip_task_id("jat-abc: Fix it", "jat-abc") == "Fix it"
    assert strip_task_id("[JAT-ABC] Fix it", "jat-abc") == "Fix it"
    assert strip_task_id("Fix it (jat-abc)", "jat-abc") == "Fix it"
    assert strip_task_id("jat-abcd: Fix it", "jat-abc") == "jat-abcd: Fix it"
    assert strip_task_id("jat-abc", "jat-abc") == "jat-abc"


# -- bundles -------------------------------------------------------------------------


def test_load_bundle_camel_case(tmp_path):
    path = tmp_path / "bundle.json"
    path.write_text(
        json.dumps(
            {
                "task_id": "jat-abc",
                "agentName": "FairBay",
                "summary": ["Increased token refresh timeout", "Added retry logic"],
                "approach": "Traced the OAuth flow.",
                "decisions": ["Env var for the timeout"],
                "quality": {"tests": "passing", "build": "clean"},  # ignored
                "suggestedTasks": [{"title": "x"}],
                "crossAgentIntel": {
                    "files": ["src/auth/refresh.ts:45 - timeout value"],
                    "patterns": ["Use env vars for timeouts"],
                    "gotchas": ["Refresh returns 200 on partial failure"],
                },
                "lessons": ["Provider is slow under load"],
                "labels": ["security"],
                "tags": ["auth"],
                "priority": 1,
                "type": "bug",
                "riskLevel": "medium",
            }
        ),
        encoding="utf-8",
    )
    bundle = load_bundle(path)
    assert bundle == CompletionBundle(
        summary=["Increased token refresh timeout", "Added retry logic"],
        approach="Traced the OAuth flow.",
        decisions=["Env var for the timeout"],
        lessons=["Provider is slow under load"],
        patterns=["Use env vars for timeouts"],
        gotchas=["Refresh returns 200 on partial failure"],
        files=["src/auth/refresh.ts:45 - timeout value"],
        tags=["auth"],
        labels=["security"],
        priority=1,
        task_type="bug",
        risk="medium",
        task="jat-abc",
        agent="FairBay",
    )


def test_load_bundle_snake_case_and_string_summary(tmp_path):
    path = tmp_path / "bundle.json"
    path.write_text(
        json.dumps(
            {
                "summary": "- Fixed the timeout\n  when the provider is slow\n- Added a test\n",
                "cross_agent_intel": {"patterns": "One pattern"},
                "gotchas": ["top-level gotcha"],
                "key_files": [{"path": "src/a.py", "line": 3, "note": "the fix"}, {"file": "b.py"}],
                "task_type": "feature",
                "risk": "low",
                "priority": "2",
            }
        ),
        encoding="utf-8",
    )
    bundle = load_bundle(path)
    assert bundle.summary == ["Fixed the timeout when the provider is slow", "Added a test"]
    assert bundle.patterns == ["One pattern"]
    assert bundle.gotchas == ["top-level gotcha"]
    assert bundle.files == ["src/a.py:3 - the fix", "b.py"]
    assert (bundle.task_type, bundle.risk, bundle.priority) == ("feature", "low", 2)

    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"summary": "First line\nSecond line"}), encoding="utf-8")
    assert load_bundle(plain).summary == ["First line", "Second line"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", r"bad\.json: not valid JSON \(.*line 1 column 2\)"),
        ("[1, 2]", r"bad\.json: a completion bundle must be a JSON object"),
        ('{"summary": 3}', r"bad\.json: key 'summary' must be a list of strings"),
        (
            '{"crossAgentIntel": {"gotchas": [{"a": 1}]}}',
            r"bad\.json: key 'crossAgentIntel\.gotchas' must be a list of strings",
        ),
        ('{"crossAgentIntel": ["x"]}', r"bad\.json: key 'crossAgentIntel' must be an object"),
        ('{"priority": "high"}', r"bad\.json: key 'priority' must be a whole number"),
        ('{"approach": {"x": 1}}', r"bad\.json: key 'approach' must be a string"),
    ],
)
def test_load_bundle_errors_name_file_and_key(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UsageError, match=message):
        load_bundle(path)


def test_load_bundle_missing_file(tmp_path):
    with pytest.raises(UsageError, match=r"nope\.json does not exist"):
        load_bundle(tmp_path / "nope.json")


# -- rendering -------------------------------------------------------------------------


def _commit_stub(sha: str, subject: str):
    from lore.index.gitrepo import Commit

    return Commit(
        sha=sha,
        parents=(),
        author="a",
        email="a@x",
        date="2026-01-01T00:00:00+00:00",
        subject=subject,
        body="",
        files=(),
    )


FULL_CHANGES = TaskChanges(
    commits=[
        _commit_stub("b" * 40, "jat-abc: add retry wrapper"),
        _commit_stub("a" * 40, "[jat-abc] raise timeout"),
    ],
    files=["src/auth/refresh.ts", "src/config.ts", "src/lib/retry.ts"],
    key_files=[
        ("src/auth/refresh.ts", 40, "+5 −1 lines"),
        ("src/config.ts", 12, "+2 lines"),
        ("src/lib/retry.ts", 1, "new file, +30 lines"),
    ],
    decisions=[
        "Increased timeout to 15s rather than adding retries (aaaaaaa)",
        "Env var for the timeout (bbbbbbb)",
    ],
    task="jat-abc",
)


def test_render_body_full_round_trips_through_the_markdown_parser():
    bundle = CompletionBundle(
        summary=["Increased token refresh timeout from 5s to 15s", "Added retry logic"],
        approach="Investigated the auth timeout.\n\n## Not a section\n\n```\n# code stays\n```",
        decisions=["Env var for the timeout.", "Kept the old API\nbecause callers depend on it"],
        lessons=["The provider takes 8s+ under load"],
        patterns=["Use env vars for timeouts"],
        gotchas=["Refresh returns 200 on partial failures"],
        files=[
            "src/auth/refresh.ts:45 - timeout value, now reads from env",
            "`src/config.ts` — new OAUTH_TIMEOUT constant",
            "The retry wrapper is worth reading",
        ],
    )
    body = render_body(bundle, FULL_CHANGES)
    assert (
        body
        == """\
## Summary

- Increased token refresh timeout from 5s to 15s
- Added retry logic

## Approach

Investigated the auth timeout.

\\## Not a section

```
# code stays
```

## Decisions

- Env var for the timeout.
- Kept the old API
  because callers depend on it
- Increased timeout to 15s rather than adding retries (aaaaaaa)

## Key Files

- `src/auth/refresh.ts:45` - timeout value, now reads from env
- `src/config.ts:12` - new OAUTH_TIMEOUT constant
- The retry wrapper is worth reading
- `src/lib/retry.ts:1` - new file, +30 lines

## Lessons

- The provider takes 8s+ under load
- Refresh returns 200 on partial failures

## Cross-Agent Intel

### Patterns

- Use env vars for timeouts

### Gotchas

- Refresh returns 200 on partial failures
"""
    )
    text = (
        "---\ntask: jat-abc\nagent: FairBay\nproject: chimaro\ncompleted: 2026-02-10T15:30:00Z\n"
        "files:\n  - src/auth/refresh.ts\ntags:\n  - auth\ntype: bug\n---\n\n" + body
    )
    memory, body_line = markdown.parse(text.encode("utf-8"), "2026-02-10-jat-abc-x.md")
    assert memory.task == "jat-abc" and memory.task_type == "bug"
    assert memory.body == body
    assert [s.section for s in split_sections(memory.body)] == [
        "summary",
        "approach",
        "decisions",
        "key_files",
        "lessons",
        "cross_agent_intel",
    ]
    assert summarize(memory.body) == ("- Increased token refresh timeout from 5s to 15s - Added retry logic")
    assert memory.summary == summarize(body)


def test_render_body_minimal_falls_back_to_git_and_omits_empty_sections():
    changes = TaskChanges(commits=FULL_CHANGES.commits, task="jat-abc")
    body = render_body(CompletionBundle(), changes)
    assert (
        body
        == """\
## Summary

- Raise timeout
- Add retry wrapper

## Approach

Work in 2 commits (aaaaaaa..bbbbbbb): Raise timeout; Add retry wrapper.
"""
    )
    assert [s.section for s in split_sections(body)] == ["summary", "approach"]
    assert summarize(body) == "- Raise timeout - Add retry wrapper"


def test_render_body_lessons_from_gotchas_and_key_files_cap():
    paths = [f"src/m{i:02}.py" for i in range(20)]
    changes = TaskChanges(files=paths, key_files=[(p, 3, "+1 −1 lines") for p in paths], task="jat-big")
    bundle = CompletionBundle(
        summary=["Big refactor"], gotchas=["Watch the cache"], files=["src/m05.py - the heart of it"]
    )
    body = render_body(bundle, changes)
    sections = {s.section: s.text for s in split_sections(body)}
    assert list(sections) == ["summary", "approach", "key_files", "lessons", "cross_agent_intel"]
    assert sections["lessons"] == "## Lessons\n\n- Watch the cache"
    assert sections["cross_agent_intel"] == "## Cross-Agent Intel\n\n### Gotchas\n\n- Watch the cache"
    key_lines = sections["key_files"].splitlines()[2:]
    assert key_lines[0] == "- `src/m05.py:3` - the heart of it"
    assert key_lines[1] == "- `src/m00.py:3` - +1 −1 lines"
    assert len(key_lines) == 1 + 15 + 1
    assert key_lines[-1] == "- …and 4 more changed files"
    assert "`src/m05.py" not in "\n".join(key_lines[1:])
    assert "Uncommitted changes to 20 files" in sections["approach"]


def test_end_to_end_from_repo_and_bundle_file(repo, tmp_path):
    write(repo, "src/auth.py", numbered(20))
    commit(repo, "Initial import")
    write(repo, "src/auth.py", numbered(20).replace("line 9\n", "TIMEOUT = 15\n"))
    commit(repo, "jat-e2e: raise timeout\n\nUse 15s rather than 5s because the provider is slow.")
    sha = git(repo, "rev-parse", "HEAD")[:7]
    bundle_path = tmp_path / "bundle.json"
    bundle_path.write_text(
        json.dumps(
            {"summary": [], "crossAgentIntel": {"files": ["src/auth.py"], "gotchas": ["Provider is slow"]}}
        ),
        encoding="utf-8",
    )
    body = render_body(load_bundle(bundle_path), task_changes(repo, "jat-e2e"))
    assert "## Summary\n\n- Raise timeout\n" in body
    assert f"- Use 15s rather than 5s because the provider is slow ({sha})" in body
    assert "- `src/auth.py:9` - +1 −1 lines\n" in body
    assert body.index("## Lessons") < body.index("## Cross-Agent Intel")


def test_key_files_of_a_bundle_are_the_projects_and_both_lists_count(repo, tmp_path):
    """`files` and `key_files` both given: the second was dropped without a word;
    a path outside the project went into the memory's Key Files."""
    write(repo, "src/a.py", numbered(5))
    commit(repo, "jat-k: add a")
    both = tmp_path / "both.json"
    both.write_text(json.dumps({"files": ["src/a.py"], "key_files": ["src/b.py - the b", "src/a.py"]}))
    bundle = load_bundle(both)
    assert bundle.files == ["src/a.py", "src/b.py - the b"]
    body = render_body(bundle, task_changes(repo, "jat-k"))
    assert "- `src/a.py" in body and "- `src/b.py` - the b" in body
    for outside in ("/etc/passwd", "../../outside/secret.py", "C:\\Users\\x.py"):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"files": [outside]}))
        with pytest.raises(UsageError, match="not a path inside the project"):
            render_body(load_bundle(bad), task_changes(repo, "jat-k"))


def test_deletions_and_short_lived_files(repo):
    write(repo, "keep.txt", numbered(10))
    commit(repo, "Initial import")
    write(repo, "keep.txt", numbered(10).replace("line 4\nline 5\n", ""))
    write(repo, "scratch.txt", "temporary\n")
    commit(repo, "jat-del: trim")
    (repo / "scratch.txt").unlink()
    commit(repo, "jat-del: drop the scratch file")
    changes = task_changes(repo, "jat-del")
    # a pure deletion points at the line before it; a file added and removed again is gone
    assert changes.key_files == [("keep.txt", 3, "−2 lines")]


def test_merge_of_task_commits_is_not_counted_twice(repo):
    write(repo, "a.txt", numbered(5))
    commit(repo, "Initial")
    git(repo, "checkout", "-q", "-b", "jat-twice")
    write(repo, "a.txt", numbered(5).replace("line 2\n", "line two\n"))
    commit(repo, "jat-twice: edit a")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "jat-twice", "-m", "Merge jat-twice")
    changes = task_changes(repo, "jat-twice")
    assert [c.subject for c in changes.commits] == ["Merge jat-twice", "jat-twice: edit a"]
    assert changes.key_files == [("a.txt", 2, "+1 −1 lines")]
