"""Git hooks end to end: `lore hooks install` in a real repository, real `git`
commands firing them, and the detached background updater keeping the index
fresh with no `lore index` run. `[index] auto_sync = false` makes `lore code`
read the index as it is, so what it finds is what the hooks indexed.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import time

import pytest

from test_code_index import code, commit, configure, git, paths, write

WAIT_S = 20.0

OLD_HOOK = b"""#!/bin/sh
# the team's own post-commit hook
echo "ran $(git rev-parse HEAD)" >> .git/old-hook-ran.txt
exit 0
"""


def wait_for(predicate, what: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.25)


def updater_idle(root) -> bool:
    """No update requested and none running (the updater holds update.lock while it runs)."""
    local = root / ".lore/local"
    if (local / "update.pending").exists():
        return False
    lock = local / "update.lock"
    if not lock.exists():
        return True
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def log_lines(root) -> list[str]:
    log = root / ".lore/local/hooks.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def hooked(cli):
    """A git repo with one commit, indexed, BM25 only, no auto sync before reads."""
    root = cli.cwd
    git(root, "init", "-q", "-b", "main")
    configure(root, auto_sync=False)
    write(root, "app.py", "def start():\n    return 'start'\n")
    commit(root, "Initial commit")
    cli.json("index")
    yield cli
    # Never leave a detached updater writing into a folder pytest is about to delete.
    wait_for(lambda: updater_idle(root), "the background updater to finish")


def test_install_chains_the_existing_hook_and_a_commit_updates_the_index_in_background(hooked):
    root = hooked.cwd
    hook = root / ".git/hooks/post-commit"
    hook.write_bytes(OLD_HOOK)
    hook.chmod(0o755)

    installed = hooked.json("hooks", "install")["installed"]
    assert "post-commit" in installed and "post-checkout" in installed
    assert hooked.json("hooks", "install")["installed"] == []  # idempotent

    write(root, "app.py", "def feed_pangolins():\n    return 'ants'\n")
    assert code(hooked, "pangolins") == []  # the index does not have it yet
    sha = commit(root, "Feed the pangolins")
    assert f"ran {sha}" in (root / ".git/old-hook-ran.txt").read_text()  # the old hook still ran

    wait_for(lambda: paths(code(hooked, "pangolins")) == ["app.py"], "the commit to be indexed")
    wait_for(lambda: any(" ok post-commit:" in line for line in log_lines(root)), "an ok line in hooks.log")
    assert not [line for line in log_lines(root) if " error " in line]
    status = hooked.json("status")
    assert status["indexed_commit"] == sha and status["up_to_date"] is True

    wait_for(lambda: updater_idle(root), "the background updater to finish")
    removed = hooked.json("hooks", "uninstall")["removed"]
    assert "post-commit" in removed
    assert hook.read_bytes() == OLD_HOOK
    assert stat.S_IMODE(hook.stat().st_mode) == 0o755
    assert not (root / ".git/hooks/post-merge").exists()  # Lore created it, Lore removed it
    assert hooked.json("hooks", "uninstall")["removed"] == []


def test_rapid_commits_leave_the_final_state_indexed(hooked):
    root = hooked.cwd
    hooked.json("hooks", "install")
    for i in range(6):
        write(root, "app.py", f"def marker{i}():\n    return 'state {i}'\n")
        write(root, f"notes/n{i}.py", f"def note{i}():\n    return {i}\n")
        commit(root, f"Step {i}")
    head = git(root, "rev-parse", "HEAD")

    def final_state_indexed():
        status = hooked.json("status")
        return status["indexed_commit"] == head and status["up_to_date"]

    wait_for(final_state_indexed, "the last commit to be indexed")
    assert paths(code(hooked, "marker5")) == ["app.py"]
    assert code(hooked, "marker4") == [] and code(hooked, "marker0") == []
    assert set(paths(code(hooked, "note0", "note5", "--limit", "20"))) >= {"notes/n0.py", "notes/n5.py"}
    assert subjects_of(hooked.json("history", "step", "--limit", "20")) >= {f"Step {i}" for i in range(6)}
    assert not [line for line in log_lines(root) if " error " in line]


def test_checkout_hook_reindexes_the_branch(hooked):
    root = hooked.cwd
    git(root, "checkout", "-q", "-b", "other")
    write(root, "app.py", "def otter_slide():\n    return 'wheee'\n")
    other = commit(root, "Otters")
    git(root, "checkout", "-q", "main")
    hooked.json("index")
    assert code(hooked, "otter") == []

    hooked.json("hooks", "install")
    git(root, "checkout", "-q", "other")
    wait_for(lambda: paths(code(hooked, "otter")) == ["app.py"], "the checkout to be indexed")
    wait_for(lambda: hooked.json("status")["indexed_commit"] == other, "indexedCommit to follow HEAD")
    assert any(" ok post-checkout:" in line for line in log_lines(root))


def subjects_of(hits: list[dict]) -> set[str]:
    return {h["subject"] for h in hits}


def test_a_lore_module_in_the_repository_is_never_run_by_the_hooks(hooked, tmp_path):
    """git runs hooks at the top of the work tree; `python -m lore` there would
    import the repository's own lore.py instead of Lore (code execution, and the
    index silently stops updating)."""
    root = hooked.cwd
    hooked.json("hooks", "install")
    marker = tmp_path / "ran-the-repository-module"
    write(root, "lore.py", f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    write(root, "app.py", "def feed_quokkas():\n    return 'leaves'\n")
    sha = commit(root, "Feed the quokkas")
    wait_for(lambda: hooked.json("status")["indexed_commit"] == sha, "Lore's hook to index the commit")
    assert paths(code(hooked, "quokkas")) == ["app.py"]
    assert not marker.exists()


def test_hooks_installed_by_an_older_lore_are_renewed_when_they_run(hooked):
    """Blocks written before hooks ran `python -P -m lore` are brought up to date
    the next time one runs, so an existing install does not stay exposed."""
    import sys

    from lore.index import githooks

    root = hooked.cwd
    githooks.install(root, [sys.executable, "-m", "lore", "hooks", "run"])  # what an older Lore wrote
    hook = root / ".git/hooks/post-commit"
    assert " -P " not in hook.read_text()
    (root / ".git/hooks/post-merge").unlink()  # taken out by hand (or by a hook manager)
    write(root, "app.py", "def feed_wombats():\n    return 'grass'\n")
    sha = commit(root, "Feed the wombats")
    wait_for(lambda: hooked.json("status")["indexed_commit"] == sha, "the hook to index the commit")
    wait_for(lambda: " -P -m lore hooks run" in hook.read_text(), "the hook block to be renewed")
    # Only the blocks there are renewed: a hook someone took Lore out of was put back.
    assert not (root / ".git/hooks/post-merge").exists()


def test_hooks_keep_projects_in_folders_of_the_repository_fresh(cli, tmp_path):
    """`lore init --here` in two folders of a monorepo: git runs hooks at the top
    of the work tree, where there is no .lore/, so each hook block names its
    project, and installing the second project's hooks keeps the first's."""
    top = tmp_path / "mono"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    write(top, "svc/app.py", "def start():\n    return 'start'\n")
    write(top, "web/page.py", "def render():\n    return 'page'\n")
    commit(top, "Initial commit")
    projects = {name: type(cli)(top / name) for name in ("svc", "web")}
    for name, project in projects.items():
        project("init", "--here")
        configure(top / name, auto_sync=False)
        project.json("index")
        project.json("hooks", "install")
    try:
        write(top, "svc/app.py", "def feed_capybaras():\n    return 'grass'\n")
        write(top, "web/page.py", "def paint_capybaras():\n    return 'brown'\n")
        sha = commit(top, "Feed and paint the capybaras")
        for name, project in projects.items():
            wait_for(lambda p=project: p.json("status")["indexed_commit"] == sha, f"{name}'s hook to run")
        assert paths(code(projects["svc"], "capybaras")) == ["app.py"]
        assert paths(code(projects["web"], "capybaras")) == ["page.py"]
        assert not (top / ".lore").exists()
        assert projects["svc"].json("hooks", "uninstall")["removed"]
        assert "# project: web" in (top / ".git/hooks/post-commit").read_text()
    finally:
        for name in projects:
            wait_for(lambda n=name: updater_idle(top / n), "the background updater to finish")


def test_hooks_outside_a_git_repository_say_what_to_do(cli, tmp_path):
    """A project folder that is no repository (one holding a clone in a subfolder, say)."""
    write(cli.cwd, "inner/app.py", "def start():\n    return 'start'\n")
    git(cli.cwd / "inner", "init", "-q", "-b", "main")
    for where in (cli.cwd, cli.cwd / "inner"):
        for verb in ("install", "uninstall"):
            proc = cli("hooks", verb, ok=False, cwd=where)
            assert proc.returncode == 2, proc.stderr
            assert f"{cli.cwd} is not in a git repository" in proc.stderr and "lore init" in proc.stderr
            assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_a_hook_whose_python_is_gone_says_so_in_the_log_and_never_fails_git(hooked, tmp_path):
    """The venv the hooks were installed from was deleted or moved: the hook must
    not block or fail git, and the index going stale must leave a line in the log
    (before, nothing ran and nothing said why)."""
    root = hooked.cwd
    team_hook = root / ".git/hooks/post-checkout"
    team_hook.write_text("#!/bin/sh -e\necho team-hook-ran >> .git/team-hook-ran.txt\n")
    team_hook.chmod(0o755)
    from lore.index import githooks

    gone = tmp_path / "deleted-venv/bin/python3"
    githooks.install(root, [str(gone), "-P", "-m", "lore", "hooks", "run"])
    write(root, "app.py", "def feed_okapis():\n    return 'leaves'\n")
    commit(root, "Feed the okapis")  # fails the test if git fails
    git(root, "checkout", "-q", "-b", "other")
    lines = log_lines(root)
    assert [line.split(" ", 1)[1] for line in lines] == [
        f"error {hook}: {gone} is not there, so the index was not refreshed; "
        "run `lore hooks install` again with the Lore you use"
        for hook in ("post-commit", "post-checkout")
    ]
    assert (root / ".git/team-hook-ran.txt").read_text() == "team-hook-ran\n"  # `sh -e` hook ran on


def test_a_hook_run_that_cannot_open_the_project_says_why_in_the_log(hooked):
    """A broken .lore/config.toml: the background updater's error went to
    /dev/null; it must leave one line in the hook log instead."""
    root = hooked.cwd
    hooked.json("hooks", "install")
    config = root / ".lore/config.toml"
    config.write_text(config.read_text() + "\n[[[broken\n")
    write(root, "app.py", "def feed_tapirs():\n    return 'fruit'\n")
    commit(root, "Feed the tapirs")
    line = wait_for(
        lambda: [line for line in log_lines(root) if " error " in line], "an error line in hooks.log"
    )
    assert len(line) == 1 and line[0].split(" ", 1)[1].startswith(
        f"error post-commit: {config}: invalid TOML"
    ), line
    assert line[0].endswith("; the index was not refreshed")
    # Said once: not again as the command's own error, which the hook sends to the log too.
    time.sleep(1)
    assert "lore: error" not in (root / ".lore/local/hooks.log").read_text()


def test_hooks_status_says_which_hooks_hold_the_block_and_which_are_outdated(hooked, tmp_path):
    """`lore hooks status`: missing before install, installed after, outdated when
    the hooks run another Python (a venv since deleted), where git reads them."""
    from lore.index import githooks

    root = hooked.cwd
    names = ["post-commit", "post-merge", "post-checkout", "post-rewrite"]
    before = hooked.json("hooks", "status")
    assert before == {"hooks_dir": str(root / ".git/hooks"), "hooks": dict.fromkeys(names, "missing")}
    hooked.json("hooks", "install")
    assert hooked.json("hooks", "status")["hooks"] == dict.fromkeys(names, "installed")
    githooks.install(root, [str(tmp_path / "old-venv/bin/python3"), "-P", "-m", "lore", "hooks", "run"])
    assert hooked.json("hooks", "status")["hooks"] == dict.fromkeys(names, "outdated")
    text = hooked("hooks", "status").stdout
    assert "post-commit    outdated" in text and "run `lore hooks install`" in text
    hooked.json("hooks", "install")
    assert hooked.json("hooks", "status")["hooks"] == dict.fromkeys(names, "installed")
    # --project after the subcommand too, as other commands take it (an audit: "No such option").
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    named = hooked("hooks", "status", "--project", str(root), "--json", cwd=elsewhere)
    assert json.loads(named.stdout)["hooks"] == dict.fromkeys(names, "installed")


def test_a_worktree_nested_in_the_project_without_its_own_lore_does_not_refresh_it(hooked):
    """Hooks are shared by all worktrees; one made inside the project's folder
    (`git worktree add .worktrees/feat`) has no .lore/ of its own, and its
    commits and checkouts must not re-index the project around it."""
    root = hooked.cwd
    (root / ".git/info/exclude").write_text(".worktrees/\n.lore/\n")
    git(root, "rm", "-r", "-q", "--cached", ".lore")
    commit(root, "Keep Lore's folder out of the repository")
    hooked.json("index")
    hooked.json("hooks", "install")
    git(root, "worktree", "add", "-q", ".worktrees/feat", "-b", "feat")
    nested = root / ".worktrees/feat"
    write(nested, "app.py", "def feed_lemurs():\n    return 'fruit'\n")
    commit(nested, "Feed the lemurs")
    time.sleep(1)  # time for a wrongly started updater to start
    wait_for(lambda: updater_idle(root), "any background updater to finish")
    write(root, "app.py", "def feed_sloths():\n    return 'leaves'\n")
    sha = commit(root, "Feed the sloths")
    wait_for(lambda: hooked.json("status")["indexed_commit"] == sha, "the project's own commit to be indexed")
    wait_for(lambda: updater_idle(root), "the background updater to finish")
    assert [line.split(" ")[1:3] for line in log_lines(root)] == [["ok", "post-commit:"]]
    assert not (nested / ".lore").exists()


def test_installing_into_hooks_shared_with_other_repositories_says_so(hooked, tmp_path):
    """A global core.hooksPath (one folder of hooks for every repository): the
    block runs for all of them and any one's uninstall removes it; say so."""
    root = hooked.cwd
    own = hooked("hooks", "install")
    assert own.stderr == ""
    hooked.json("hooks", "uninstall")
    git(root, "config", "core.hooksPath", ".githooks")  # in the work tree: its own, but committed maybe
    assert "a folder of the repository" in hooked("hooks", "install").stderr
    hooked.json("hooks", "uninstall")
    shared = tmp_path / "shared-hooks"
    git(root, "config", "core.hooksPath", str(shared))
    proc = hooked("hooks", "install", "--json")
    assert json.loads(proc.stdout)["installed"] and (shared / "post-commit").exists()
    assert proc.stderr.splitlines() == [
        f"lore: note: git reads hooks from {shared} (core.hooksPath), outside this repository: "
        "every repository using that folder runs them, and `lore hooks uninstall` in any of them removes them"
    ]


def test_nothing_is_written_through_links_out_of_the_project(hooked, tmp_path):
    """A cloned repository can commit `.lore/local` as a link to a folder
    elsewhere, or `hooks.log` as a link to a file of the user's: `lore index`
    wrote its caches and lock there, and every hook run a line of log."""
    root = hooked.cwd
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = tmp_path / "victim_rc"
    victim.write_text("precious\n")
    hooked.json("hooks", "install")
    local = root / ".lore/local"
    (local / "hooks.log").unlink(missing_ok=True)
    (local / "hooks.log").symlink_to(victim)
    write(root, "app.py", "def start():\n    return 'started'\n")
    commit(root, "Start differently")
    wait_for(lambda: updater_idle(root), "the background updater to finish")
    assert victim.read_text() == "precious\n"
    for name in ("cache", "hooks.log", "update.lock"):
        (local / name).unlink() if (local / name).is_symlink() or (local / name).is_file() else None
    shutil.rmtree(local)
    local.symlink_to(elsewhere)
    write(root, "more.py", "def feed_zebras():\n    return 'grass'\n")
    hooked.json("index")
    commit(root, "More")
    wait_for(lambda: updater_idle(root), "the background updater to finish")
    assert list(elsewhere.iterdir()) == []
    assert [h["file_path"] for h in hooked.json("code", "feed_zebras")][:1] == ["more.py"]
