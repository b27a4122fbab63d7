"""Git hooks: install/uninstall with chaining, background runs, coalesced updates."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import lore
from lore.errors import LoreError
from lore.index import githooks
from lore.index.githooks import HOOKS

pytestmark = [
    pytest.mark.usefixtures("git_env"),
    pytest.mark.storage_independent,
]  # no index: CI's postgres pass may skip


def git(repo: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, input=input
    )


def commit(repo: Path, message: str = "change") -> subprocess.CompletedProcess[str]:
    (repo / "file.txt").write_text(f"{message} {time.time_ns()}\n")
    git(repo, "add", "-A")
    return git(repo, "commit", "-q", "-m", message)


def wait_for(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def executable(path: Path, text: str, mode: int = 0o755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, "initial")
    return root


@pytest.fixture
def recorder(tmp_path):
    """A stand-in for `python -m lore hooks run`: appends its arguments to a log."""
    log = tmp_path / "lore-calls.log"
    script = executable(
        tmp_path / "bin" / "record",
        textwrap.dedent(f"""\
        #!/bin/sh
        [ -n "$LORE_TEST_SLEEP" ] && sleep "$LORE_TEST_SLEEP"
        echo "$* index=${{GIT_INDEX_FILE-unset}} project=${{LORE_PROJECT-unset}}" >> {shlex.quote(str(log))}
        """),
    )
    return [str(script)], log


def hooks_path(repo: Path) -> Path:
    return repo / ".git" / "hooks"


def snapshot(directory: Path) -> dict[str, tuple[bytes, int, bool]]:
    """Every entry of a hooks directory: bytes (or link target), mode, is-link."""
    result = {}
    for entry in sorted(directory.iterdir()):
        if entry.is_symlink():
            result[entry.name] = (os.readlink(entry).encode(), 0, True)
        else:
            result[entry.name] = (entry.read_bytes(), stat.S_IMODE(entry.stat().st_mode), False)
    return result


# -- installing into an empty repository -------------------------------------


def test_install_fresh_hooks_run_the_command_on_git_events(repo, recorder):
    command, log = recorder
    before = snapshot(hooks_path(repo))
    assert githooks.install(repo, command) == list(HOOKS)
    assert githooks.installed(repo) == dict.fromkeys(HOOKS, True)
    for name in HOOKS:
        hook = hooks_path(repo) / name
        assert hook.stat().st_mode & stat.S_IXUSR
        assert hook.read_bytes().startswith(b"#!/bin/sh\n# >>> lore >>>\n")

    commit(repo, "second")
    assert wait_for(lambda: any(line.startswith("post-commit") for line in lines(log)))
    git(repo, "checkout", "-q", "-b", "topic")
    assert wait_for(lambda: any(line.startswith("post-checkout ") for line in lines(log)))
    git(repo, "commit", "-q", "--amend", "-m", "second, amended")
    assert wait_for(lambda: any(line.startswith("post-rewrite amend") for line in lines(log)))
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-edit", "topic")
    assert wait_for(lambda: any(line.startswith("post-merge 0") for line in lines(log)))
    # post-checkout gets git's three arguments (old, new, branch flag).
    checkout = next(line for line in lines(log) if line.startswith("post-checkout"))
    assert len(checkout.split()) == 6 and checkout.split()[3] == "1"
    # The command does not inherit the hook's GIT_INDEX_FILE.
    assert all("index=unset" in line for line in lines(log))

    assert githooks.uninstall(repo) == list(HOOKS)
    assert snapshot(hooks_path(repo)) == before
    assert githooks.installed(repo) == dict.fromkeys(HOOKS, False)
    assert githooks.uninstall(repo) == []


def test_a_hook_refreshes_its_own_repository_whatever_lore_project_says(repo, recorder, monkeypatch):
    """An audit: an agent's shell exports LORE_PROJECT (the integrations set
    it); a commit made from it in another repository refreshed that project,
    and this one stayed stale."""
    command, log = recorder
    githooks.install(repo, command)
    monkeypatch.setenv("LORE_PROJECT", "/somewhere/else")
    commit(repo, "from an agent's shell")
    assert wait_for(lambda: any(line.startswith("post-commit") for line in lines(log)))
    assert all(line.endswith("project=unset") for line in lines(log)), lines(log)


def test_install_is_idempotent_and_updates_a_changed_command(repo, recorder, tmp_path):
    command, _ = recorder
    githooks.install(repo, command)
    first = snapshot(hooks_path(repo))
    assert githooks.install(repo, command) == []
    assert snapshot(hooks_path(repo)) == first

    other = executable(tmp_path / "other bin" / "lore's python", "#!/bin/sh\n")
    assert githooks.install(repo, [str(other), "-m", "lore"]) == list(HOOKS)
    text = (hooks_path(repo) / "post-commit").read_text()
    assert shlex.quote(str(other)) in text and text.count("# >>> lore >>>") == 1
    githooks.uninstall(repo)
    assert not any((hooks_path(repo) / name).exists() for name in HOOKS)


def test_hook_does_not_wait_for_a_slow_command(repo, recorder, monkeypatch):
    command, log = recorder
    githooks.install(repo, command)
    monkeypatch.setenv("LORE_TEST_SLEEP", "2")
    started = time.monotonic()
    commit(repo, "quick")
    elapsed = time.monotonic() - started
    assert elapsed < 1.0
    assert lines(log) == []  # still sleeping in the background
    assert wait_for(lambda: bool(lines(log)), timeout=6)


def test_missing_command_is_silent(repo, tmp_path):
    githooks.install(repo, [str(tmp_path / "uninstalled" / "python"), "-m", "lore"])
    result = commit(repo, "still works")
    assert result.returncode == 0 and result.stderr == ""
    githooks.install(repo, ["lore-command-that-does-not-exist"])
    result = commit(repo, "still works again")
    assert result.returncode == 0 and result.stderr == ""


# -- chaining existing hooks --------------------------------------------------


def test_existing_shell_hook_keeps_running_and_its_status(repo, recorder, tmp_path):
    command, log = recorder
    observed = tmp_path / "original.log"
    original = (
        f"#!/bin/sh\n"
        f'echo "original $*" >> {shlex.quote(str(observed))}\n'
        f"exit 3\n"
        f"echo unreachable >> {shlex.quote(str(observed))}\n"
    )
    hook = executable(hooks_path(repo) / "post-checkout", original, 0o750)
    assert githooks.install(repo, command) == list(HOOKS)
    text = hook.read_text()
    assert text.startswith("#!/bin/sh\n# >>> lore >>>\n")  # before the early exit
    assert text.endswith(original[len("#!/bin/sh\n") :])
    assert stat.S_IMODE(hook.stat().st_mode) == 0o750

    # Run by hand: the original's exit status is the hook's status.
    result = subprocess.run([str(hook), "a", "b", "1"], cwd=repo)
    assert result.returncode == 3
    assert lines(observed) == ["original a b 1"]
    assert wait_for(lambda: "post-checkout a b 1 index=unset project=unset" in lines(log))

    # Run by git: `git checkout` fails when post-checkout fails (git reports
    # 1), so the original's status, not Lore's, reaches git.
    result = subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-b", "topic"])
    assert result.returncode == 1
    assert wait_for(lambda: len(lines(observed)) == 2)
    assert wait_for(lambda: len([x for x in lines(log) if x.startswith("post-checkout")]) == 2)

    githooks.uninstall(repo)
    assert hook.read_text() == original
    assert stat.S_IMODE(hook.stat().st_mode) == 0o750


@pytest.mark.parametrize(
    "original",
    [
        b"#!/bin/bash\nset -eu\necho hi\n",
        b"#!/usr/bin/env bash\r\necho windows line ending\r\n",
        b"echo 'no shebang, no trailing newline'",
        b"#!/bin/sh",
        b"#!/bin/sh\n",
        b"",
    ],
    ids=["bash", "env-bash-crlf", "no-shebang", "shebang-only", "shebang-newline", "empty"],
)
def test_uninstall_restores_shell_hooks_byte_for_byte(repo, recorder, original):
    command, _ = recorder
    hook = hooks_path(repo) / "post-merge"
    hook.write_bytes(original)
    hook.chmod(0o755)
    before = snapshot(hooks_path(repo))
    assert "post-merge" in githooks.install(repo, command)
    assert b"# >>> lore >>>" in hook.read_bytes()
    assert githooks.install(repo, command) == []
    githooks.uninstall(repo)
    assert snapshot(hooks_path(repo)) == before


def test_shebang_only_hook_still_runs_lore(repo, recorder):
    command, log = recorder
    hook = hooks_path(repo) / "post-commit"
    hook.write_bytes(b"#!/bin/sh")
    hook.chmod(0o755)
    githooks.install(repo, command)
    commit(repo, "x")
    assert wait_for(lambda: any(x.startswith("post-commit") for x in lines(log)))


def test_python_hook_is_chained_through_a_wrapper(repo, recorder, tmp_path):
    command, log = recorder
    observed = tmp_path / "python-hook.log"
    original = textwrap.dedent(f"""\
        #!{sys.executable}
        import sys
        with open({str(observed)!r}, "a") as log:
            log.write(repr((sys.argv[1:], sys.stdin.read())) + "\\n")
        sys.exit(5)
        """)
    hook = executable(hooks_path(repo) / "post-rewrite", original, 0o700)
    assert githooks.install(repo, command) == list(HOOKS)
    chained = hooks_path(repo) / "post-rewrite.lore-chained"
    assert chained.read_text() == original
    assert hook.read_text().startswith("#!/bin/sh\n")
    assert hook.stat().st_mode & stat.S_IXUSR

    result = subprocess.run([str(hook), "amend"], input=b"old new\n", cwd=repo)
    assert result.returncode == 5
    assert lines(observed) == [repr((["amend"], "old new\n"))]
    assert wait_for(lambda: "post-rewrite amend index=unset project=unset" in lines(log))

    # Through git: post-rewrite gets "<old> <new>" on stdin.
    old = git(repo, "rev-parse", "HEAD").stdout.strip()
    git(repo, "commit", "-q", "--amend", "-m", "amended")
    new = git(repo, "rev-parse", "HEAD").stdout.strip()
    assert wait_for(lambda: len(lines(observed)) == 2)
    assert lines(observed)[1] == repr((["amend"], f"{old} {new}\n"))

    assert githooks.install(repo, command) == []
    githooks.uninstall(repo)
    assert hook.read_text() == original
    assert stat.S_IMODE(hook.stat().st_mode) == 0o700
    assert not chained.exists()
    assert sorted(p.name for p in hooks_path(repo).iterdir() if not p.name.endswith(".sample")) == [
        "post-rewrite"
    ]


def test_disabled_hook_stays_disabled(repo, recorder, tmp_path):
    """A hook without the executable bit is ignored by git; chaining keeps it so."""
    command, log = recorder
    observed = tmp_path / "disabled.log"
    original = f"#!/bin/sh\necho ran >> {shlex.quote(str(observed))}\n"
    hook = executable(hooks_path(repo) / "post-commit", original, 0o644)
    githooks.install(repo, command)
    commit(repo, "x")
    assert wait_for(lambda: any(x.startswith("post-commit") for x in lines(log)))
    assert not observed.exists()
    githooks.uninstall(repo)
    assert hook.read_text() == original
    assert stat.S_IMODE(hook.stat().st_mode) == 0o644


def test_symlinked_hook_is_chained_not_edited(repo, recorder, tmp_path):
    command, log = recorder
    observed = tmp_path / "shared.log"
    shared = executable(
        tmp_path / "shared" / "hook.sh", f'#!/bin/sh\necho "shared $*" >> {shlex.quote(str(observed))}\n'
    )
    shared_bytes = shared.read_bytes()
    hook = hooks_path(repo) / "post-commit"
    hook.symlink_to(shared)
    githooks.install(repo, command)
    assert shared.read_bytes() == shared_bytes  # the shared script is untouched
    assert (hooks_path(repo) / "post-commit.lore-chained").is_symlink()
    commit(repo, "x")
    assert wait_for(lambda: lines(observed) == ["shared "])
    assert wait_for(lambda: any(x.startswith("post-commit") for x in lines(log)))
    githooks.uninstall(repo)
    assert hook.is_symlink() and Path(os.readlink(hook)) == shared


# -- several projects in one repository ----------------------------------------

ORIGINALS = {
    "none": None,
    "shell": (b"#!/bin/sh\necho team hook\n", 0o755),
    "shebang-only": (b"#!/bin/sh", 0o755),
    "python": (b"#!/usr/bin/env python3\nprint('team hook')\n", 0o700),
    "disabled": (b"#!/bin/sh\necho off\n", 0o644),
}


@pytest.mark.parametrize("first_out", ["svc", "web"])
@pytest.mark.parametrize("original", list(ORIGINALS))
def test_projects_in_folders_of_one_repository_each_keep_their_own_block(repo, recorder, original, first_out):
    """Two `lore init --here` projects of a monorepo: installing the second
    replaced the first's block, so the first was never refreshed again."""
    record, log = recorder
    folders = {name: repo / name for name in ("svc", "web")}
    for folder in folders.values():
        folder.mkdir()
    hook = hooks_path(repo) / "post-commit"
    if ORIGINALS[original] is not None:
        data, mode = ORIGINALS[original]
        hook.write_bytes(data)
        hook.chmod(mode)
    before = snapshot(hooks_path(repo))
    commands = {name: [*record, name] for name in folders}

    for name, folder in folders.items():
        assert "post-commit" in githooks.install(folder, commands[name])
    for name, folder in folders.items():
        assert githooks.install(folder, commands[name]) == []  # each finds its own block
        assert githooks.installed(folder) == dict.fromkeys(HOOKS, True)
    assert githooks.installed(repo) == dict.fromkeys(HOOKS, False)  # the top has no project
    commit(repo, "both")
    assert wait_for(
        lambda: {line.split()[:2][0] for line in lines(log) if " post-commit" in line} == set(folders)
    )

    githooks.uninstall(folders[first_out])
    assert githooks.installed(folders[first_out]) == dict.fromkeys(HOOKS, False)
    assert githooks.installed(folders[{"svc": "web", "web": "svc"}[first_out]]) == dict.fromkeys(HOOKS, True)
    log.write_text("")
    commit(repo, "one left")
    assert wait_for(lambda: any(" post-commit" in line for line in lines(log)))
    time.sleep(0.2)
    assert {line.split()[0] for line in lines(log)} == set(folders) - {first_out}

    for folder in folders.values():
        githooks.uninstall(folder)
    assert snapshot(hooks_path(repo)) == before  # the last one out restores the hook exactly


def test_a_subfolder_block_written_before_project_lines_is_renewed_not_doubled(repo, recorder):
    record, _ = recorder
    (repo / "svc").mkdir()
    hook = hooks_path(repo) / "post-commit"
    # What Lore wrote for a project in a folder before blocks had a `# project:` line.
    githooks.install(repo, [*record, "--project", "svc", "hooks", "run"])
    assert b"# project:" not in hook.read_bytes()
    githooks.install(repo / "svc", [*record, "--project", "svc", "hooks", "run", "v2"])
    assert hook.read_bytes().count(b"# >>> lore >>>") == 1 and b"# project: svc" in hook.read_bytes()
    githooks.uninstall(repo / "svc")
    assert not hook.exists()


def test_leftover_chained_file_is_reported(repo, recorder):
    command, _ = recorder
    executable(hooks_path(repo) / "post-commit", "#!/usr/bin/env python3\n")
    executable(hooks_path(repo) / "post-commit.lore-chained", "#!/bin/sh\n")
    with pytest.raises(LoreError, match="already exists"):
        githooks.install(repo, command)


def test_damaged_block_is_reported(repo, recorder):
    command, _ = recorder
    githooks.install(repo, command)
    hook = hooks_path(repo) / "post-commit"
    hook.write_text(hook.read_text().replace("# <<< lore <<<", ""))
    with pytest.raises(LoreError, match="closing"):
        githooks.install(repo, command)


def test_core_hooks_path_outside_git_dir(repo, recorder):
    command, log = recorder
    git(repo, "config", "core.hooksPath", ".githooks")
    assert githooks.install(repo, command) == list(HOOKS)
    assert (repo / ".githooks" / "post-commit").exists()
    assert not (hooks_path(repo) / "post-commit").exists()
    # Run git from a subdirectory: the relative hooks path still resolves.
    (repo / "sub").mkdir()
    (repo / "sub" / "f").write_text("f\n")
    git(repo / "sub", "add", "f")
    git(repo / "sub", "commit", "-q", "-m", "from subdir")
    assert wait_for(lambda: any(x.startswith("post-commit") for x in lines(log)))
    githooks.uninstall(repo)
    assert list((repo / ".githooks").iterdir()) == []


def test_rejects_empty_command(repo):
    from lore.errors import UsageError

    with pytest.raises(UsageError):
        githooks.install(repo, [])


# -- coalescing ---------------------------------------------------------------


def test_run_coalesced_reruns_for_a_trigger_that_arrives_during_a_run(tmp_path):
    runs = []
    nested = []

    def job():
        runs.append(len(runs))
        if len(runs) == 1:
            # A trigger arriving while the job runs returns at once...
            nested.append(githooks.run_coalesced(tmp_path, lambda: runs.append("nested")))

    assert githooks.run_coalesced(tmp_path, job) is True
    # ...and the holder runs the job again for it.
    assert nested == [False]
    assert runs == [0, 1]
    assert githooks.run_coalesced(tmp_path, job) is True
    assert runs == [0, 1, 2]


def test_run_coalesced_keeps_the_request_when_the_job_fails(tmp_path):
    def failing():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        githooks.run_coalesced(tmp_path, failing)
    assert (tmp_path / "update.pending").exists()
    calls = []
    assert githooks.run_coalesced(tmp_path, lambda: calls.append(1)) is True
    assert calls == [1]
    assert not (tmp_path / "update.pending").exists()


_TRIGGER = """
import os, sys, time
from pathlib import Path
from lore.index.githooks import run_coalesced

state = Path(sys.argv[1])
seq = int(sys.argv[2])
time.sleep(float(sys.argv[3]))          # stagger arrivals so some land mid-run

def job():
    marker = state / "running"
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        with open(state / "overlaps", "a") as f:
            f.write("overlap\\n")
    requested = [int(x) for x in (state / "requested").read_text().split()]
    time.sleep(0.1)
    with open(state / "runs", "a") as f:
        f.write(f"{max(requested)}\\n")
    marker.unlink(missing_ok=True)

with open(state / "requested", "a") as f:  # the trigger's state, before triggering
    f.write(f"{seq}\\n")
print(run_coalesced(state / "lock", job))
"""


def test_run_coalesced_across_processes_never_overlaps_or_loses_a_trigger(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "requested").write_text("")
    script = tmp_path / "trigger.py"
    script.write_text(_TRIGGER)
    count = 12
    processes = [
        subprocess.Popen(
            [sys.executable, str(script), str(state), str(n), str(0.015 * n)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(count)
    ]
    outputs = [p.communicate(timeout=60)[0].strip() for p in processes]
    assert all(p.returncode == 0 for p in processes)

    assert not (state / "overlaps").exists()
    seen = [int(x) for x in (state / "runs").read_text().split()]
    requested = [int(x) for x in (state / "requested").read_text().split()]
    assert sorted(requested) == list(range(count))
    assert max(seen) == count - 1  # the last trigger's state was processed
    assert seen == sorted(seen)  # runs happen one after another
    assert "True" in outputs
    assert len(seen) < count  # bursts were coalesced
    assert not (state / "lock" / "update.pending").exists()


def test_status_says_a_background_update_is_under_way(cli, tmp_path):
    """Right after a commit `lore status` said "stale — run `lore index`" while
    the hook's update was already running."""
    from lore.locking import file_lock

    local = cli.cwd / ".lore/local"
    assert not githooks.update_running(local)
    seen = {}

    (cli.cwd / "app.py").write_text("def fresh():\n    return 1\n")  # not indexed yet: stale

    def job():
        seen["inside"] = githooks.update_running(local)
        seen["json"] = cli.json("status")["updating"]
        seen["said"] = cli("status").stdout

    githooks.run_coalesced(local, job)
    assert seen["inside"] and not githooks.update_running(local)
    with file_lock(local / "update.pending"):  # a trigger waiting for its run
        assert githooks.update_running(local)
    (local / "update.pending").unlink()
    assert not githooks.update_running(local)
    assert seen["json"] is True and "being updated in the background" in seen["said"], seen["said"]
    assert cli.json("status")["updating"] is False and "stale" in cli("status").stdout


def test_an_install_that_fails_at_one_hook_leaves_the_others_as_they_were(repo, recorder):
    """A hook that could not be written (here a folder in its place) failed the
    install with the hooks before it already changed."""
    command, _ = recorder
    hooks = hooks_path(repo)
    hooks.mkdir(parents=True, exist_ok=True)
    (hooks / "post-commit").write_text("#!/bin/sh\necho mine\n")
    (hooks / "post-commit").chmod(0o755)
    (hooks / "post-checkout").mkdir()

    def files():
        return {p.name: (p.read_bytes(), p.stat().st_mode) for p in sorted(hooks.iterdir()) if p.is_file()}

    before = files()
    with pytest.raises(LoreError, match="post-checkout is a directory"):
        githooks.install(repo, command)
    assert files() == before


def test_a_rebase_refreshes_the_index_once_at_its_end_not_at_each_commit(repo, recorder):
    """git runs post-commit for every commit a rebase makes: sixty Pythons
    started at once made a 0.8 s rebase take 5 s. Its post-rewrite covers them."""
    command, log = recorder
    githooks.install(repo, command)
    git(repo, "checkout", "-q", "-b", "topic")
    for i in range(4):
        (repo / f"f{i}.txt").write_text(f"{i}\n")
        git(repo, "add", f"f{i}.txt")
        git(repo, "commit", "-q", "-m", f"topic {i}")
    git(repo, "checkout", "-q", "main")
    (repo / "m.txt").write_text("main\n")
    git(repo, "add", "m.txt")
    git(repo, "commit", "-q", "-m", "on main")
    assert wait_for(lambda: sum(line.startswith("post-commit") for line in lines(log)) == 5)
    git(repo, "checkout", "-q", "topic")
    git(repo, "rebase", "-q", "main")
    assert wait_for(lambda: any(line.startswith("post-rewrite rebase") for line in lines(log)))
    time.sleep(0.5)  # a post-commit of the rebase would be logged by now
    assert sum(line.startswith("post-commit") for line in lines(log)) == 5


def test_installing_into_a_committed_hooks_folder_says_what_that_shares(repo, tmp_path):
    """With core.hooksPath at a team's committed `.githooks/`, the hooks were
    edited in the work tree to name this machine's Python, without a word."""
    from conftest import CLI

    (repo / ".githooks").mkdir()
    executable(repo / ".githooks" / "post-commit", "#!/bin/sh\necho team post-commit\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "team hooks")
    git(repo, "config", "core.hooksPath", ".githooks")
    lore.init(repo).close()
    installed = CLI(repo)("hooks", "install")
    assert "git reads hooks from .githooks/ (core.hooksPath), a folder of the repository" in installed.stderr
    assert "git reads hooks" not in CLI(repo)("hooks", "install").stderr  # nothing changed: nothing to say


def test_a_hook_whose_python_cannot_run_lore_says_why_in_the_log(repo):
    """The hooks' Python still there, Lore uninstalled from it: every commit
    refreshed nothing, and the log said nothing."""
    (repo / ".lore" / "local").mkdir(parents=True)
    githooks.install(repo, [sys.executable, "-P", "-m", "no_such_lore_here", "hooks", "run"])
    commit(repo, "second")
    log = repo / ".lore" / "local" / "hooks.log"
    assert wait_for(lambda: "No module named no_such_lore_here" in (log.read_text() if log.exists() else ""))


def test_a_read_during_a_background_update_answers_from_the_index_and_says_so(cli):
    """Right after a branch switch `lore code` re-indexed the same files the
    hook's update was indexing (15 s); it now answers from the index as it
    stands, with a notice, and picks up the files once the update is done."""
    local = cli.cwd / ".lore/local"
    (cli.cwd / "app.py").write_text("def kiwi_fresh():\n    return 1\n")  # not indexed yet
    seen = {}

    def job():
        seen["proc"] = cli("code", "kiwi_fresh", "--json")

    githooks.run_coalesced(local, job)
    assert "being updated in the background" in seen["proc"].stderr
    assert json.loads(seen["proc"].stdout) == []  # the index as it stood
    after = cli("code", "kiwi_fresh", "--json")
    assert "background" not in after.stderr and json.loads(after.stdout)[0]["symbol"] == "kiwi_fresh"
