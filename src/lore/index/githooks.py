"""Git hooks that keep Lore's index fresh, and running updates one at a time.

Lore adds a small block to the `post-commit`, `post-merge`, `post-checkout` and
`post-rewrite` hooks. The block starts Lore's command detached in the
background and returns at once, so it adds a few milliseconds to a git command
and can never make one fail. Existing hooks keep working:

- A shell hook gets the block inserted right after its shebang line (where an
  early `exit` cannot skip it); the hook's own exit status is untouched.
- Any other hook (Python, Node, a binary, a symlink, or a hook that is not
  executable and so was disabled) is moved to `<hook>.lore-chained`, and a
  small sh wrapper runs it with the same arguments and stdin, then the block,
  and exits with the original's status.
- Where there was no hook, Lore writes one.

`uninstall` undoes exactly that: the block's comment records how it was added
("mode"), so the original bytes, file mode and symlinks come back as they were,
and files Lore created are deleted.

Several Lore projects can share one repository (`lore init --here` in folders of
a monorepo): each has its own block, marked `# project: <folder>` (the top
folder's block has no such line), installed and removed on its own. A second
block goes right after the first; removing the first hands its mode to the next,
so the last one out restores the hook as it was.

`run_coalesced` is what the hook's command uses so that a burst of git
commands (a rebase rewrites many commits) runs one update at a time and no
update request is ever lost.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lore import atomic
from lore.errors import LoreError, UsageError
from lore.index import gitrepo

__all__ = ["HOOKS", "install", "installed", "project_folder", "run_coalesced", "states", "uninstall"]

HOOKS = ("post-commit", "post-merge", "post-checkout", "post-rewrite")

_BEGIN = b"# >>> lore >>>"
_END = b"# <<< lore <<<"
_MODE = re.compile(rb"\(mode: ([a-z+]+)\)")
_PROJECT = re.compile(rb"^# project: (.*)$", re.M)
_CHAINED = ".lore-chained"
_CREATED_HEADER = b"#!/bin/sh\n"

# How the block was added, recorded in the block so uninstall can undo it.
_CREATED = "created"  # Lore wrote the whole file
_INSERTED = "inserted"  # inserted into an existing shell hook
_INSERTED_NL = "inserted+nl"  # ... whose shebang line had no newline: one was added
_WRAPPER = "wrapper"  # the original was moved to <hook>.lore-chained

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "ash", "yash", "posh", "busybox"})

# Variables git exports to hooks that describe *this* git process's view (a
# temporary index for `git commit <paths>`, a relative GIT_INDEX_FILE, the
# caller's subdirectory). The background command finds the repository from
# its working directory, the work tree root, like any git command would.
# The hook's own git variables, and the project an agent's shell names (a commit made
# from it in another repository refreshes this one's project, not that one).
_UNSET = "GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_PREFIX GIT_COMMON_DIR LORE_PROJECT"

_LOCK_FILE = "update.lock"
_PENDING_FILE = "update.pending"


def install(root: Path, command: list[str], *, only_present: bool = False) -> list[str]:
    """Install (or update) Lore's block in each hook of :data:`HOOKS`
    (`only_present`: only update the hooks that hold the project's block, not
    add it where someone took it out).

    Args:
        root: the work tree root. Hooks go where git looks for them: the
            directory named by core.hooksPath if set, else `.git/hooks`
            (shared by all worktrees).
        command: the program to start, as an argument list; each hook runs
            `command + [hook_name, *hook_args]`, e.g.
            `[sys.executable, "-m", "lore", "hooks", "run"]`.

    Returns the names of hooks written or changed; an empty list when all were
    already up to date (installing twice changes nothing). Each project of the
    repository (see :func:`project_folder`) has a block of its own.
    """
    if not command or not all(isinstance(part, str) and part for part in command):
        raise UsageError("hook command must be a non-empty list of non-empty strings")
    project = project_folder(root)
    directory = gitrepo.hooks_dir(root)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise LoreError(
            f"cannot create the hooks directory {directory}: {error}; "
            "check core.hooksPath (`git config core.hooksPath`)"
        ) from None
    names = [n for n in HOOKS if not only_present or _find_block(_read(directory / n), project) is not None]
    done: list[tuple[str, bool]] = []  # hooks changed, and whether they held the block before
    try:
        for name in names:
            had = _find_block(_read(directory / name), project) is not None
            if _install_hook(directory / name, name, command, project):
                done.append((name, had))
    except (OSError, LoreError):
        # All or nothing: the hooks this call added the block to get their bytes back
        # (one it only renewed keeps the renewed block, a block as good as before).
        for name, had in reversed(done):
            if not had:
                try:
                    _uninstall_hook(directory / name, project)
                except (OSError, LoreError):
                    pass
        raise
    return [name for name, _ in done]


def uninstall(root: Path) -> list[str]:
    """Remove this project's block from each hook, restoring what was there before.

    A hook Lore created is deleted; a hook Lore added its block to gets its
    exact original bytes back; a hook Lore moved aside is moved back (once no
    other project's block is left in it). Hooks without the project's block
    are left alone. Returns the names of hooks changed.
    """
    project = project_folder(root)
    directory = gitrepo.hooks_dir(root)
    return [name for name in HOOKS if _uninstall_hook(directory / name, project)]


def installed(root: Path) -> dict[str, bool]:
    """For each hook name in :data:`HOOKS`, whether it holds this project's block."""
    project = project_folder(root)
    directory = gitrepo.hooks_dir(root)
    return {name: _find_block(_read(directory / name), project) is not None for name in HOOKS}


def states(root: Path, command: list[str]) -> dict[str, str]:
    """For each hook name in :data:`HOOKS`: "installed" when it holds this
    project's block as :func:`install` would write it with `command` now,
    "outdated" when it holds an older one (another Python, an older Lore:
    installing again renews it), "missing" when it holds none."""
    project = project_folder(root)
    directory = gitrepo.hooks_dir(root)
    found: dict[str, str] = {}
    for name in HOOKS:
        data = _read(directory / name)
        block = _find_block(data, project)
        if data is None or block is None:
            found[name] = "missing"
        elif data[block.start : block.end] == _block(block.mode or _INSERTED, name, command, project):
            found[name] = "installed"
        else:
            found[name] = "outdated"
    return found


def project_folder(root: Path) -> str:
    """The project's folder relative to the top of its work tree, where git runs
    hooks: "" for a project at the top, else e.g. "services/billing" (the same
    in every worktree)."""
    top = gitrepo.repo_root(root)
    here = os.path.realpath(root)
    if top is None or os.path.realpath(top) == here:
        return ""
    folder = os.path.relpath(here, os.path.realpath(top))
    if "\n" in folder or "\r" in folder:
        raise UsageError(
            f"git hooks cannot name the project folder {folder!r}: it holds a line break; rename it"
        )
    return folder


# -- installing ---------------------------------------------------------------


def _install_hook(path: Path, name: str, command: list[str], project: str) -> bool:
    data = _read(path)
    if data is None:
        _write(path, _CREATED_HEADER + _block(_CREATED, name, command, project), 0o755)
        return True

    blocks = _blocks(data)
    found = next((block for block in blocks if block.project == project), None)
    if found is not None:
        start, end, mode = found.start, found.end, found.mode
        updated = data[:start] + _block(mode or _INSERTED, name, command, project) + data[end:]
        changed = updated != data
        file_mode = stat.S_IMODE(path.stat().st_mode)
        if mode in (_CREATED, _WRAPPER) and not file_mode & stat.S_IXUSR:
            file_mode |= 0o111
            changed = True
        if changed:
            _write(path, updated, file_mode)
        return changed
    if blocks:  # another project's block: this one goes right after it
        last = blocks[-1].end
        updated = data[:last] + _block(_INSERTED, name, command, project) + data[last:]
        _write(path, updated, stat.S_IMODE(path.stat().st_mode))
        return True

    if path.is_symlink() or not os.access(path, os.X_OK) or not _is_shell_script(data):
        _wrap(path, name, command, project)
        return True

    if data.startswith(b"#!"):
        newline = data.find(b"\n")
        if newline == -1:
            updated = data + b"\n" + _block(_INSERTED_NL, name, command, project)
        else:
            updated = data[: newline + 1] + _block(_INSERTED, name, command, project) + data[newline + 1 :]
    else:
        updated = _block(_INSERTED, name, command, project) + data
    _write(path, updated, stat.S_IMODE(path.stat().st_mode))
    return True


def _wrap(path: Path, name: str, command: list[str], project: str) -> None:
    """Move the hook at `path` aside and put a wrapper that chains it in its place."""
    chained = path.with_name(path.name + _CHAINED)
    if os.path.lexists(chained):
        raise LoreError(
            f"{chained} already exists, so Lore cannot chain the {name} hook; "
            f"if it is a leftover, move it back to {path} or delete it, "
            "then install again"
        )
    wrapper = _wrapper(name, command, project)
    temporary = _temporary(path, wrapper, 0o755)
    os.rename(path, chained)
    os.replace(temporary, path)


def _wrapper(name: str, command: list[str], project: str) -> bytes:
    head = (
        f"#!/bin/sh\n"
        f"# Lore moved the original {name} hook to {name}{_CHAINED}; this wrapper runs it\n"
        f"# with the same arguments and stdin, then Lore, and exits with its status.\n"
        f'chained="$0{_CHAINED}"\n'
        "status=0\n"
        'if [ -x "$chained" ]; then\n'
        '  "$chained" "$@"\n'
        "  status=$?\n"
        "fi\n"
    ).encode()
    return head + _block(_WRAPPER, name, command, project) + b"exit $status\n"


# A rebase runs post-commit for every commit it makes (sixty Pythons at once made a
# 0.8 s rebase take 5 s): its post-rewrite refreshes the index once, at the end.
_IN_A_REBASE = (
    "if lore_git=$(git rev-parse --git-dir 2>/dev/null) && "
    '{ [ -d "$lore_git/rebase-merge" ] || [ -d "$lore_git/rebase-apply" ]; }; then\n'
    "  : # a rebase: its post-rewrite refreshes the index, once\n"
    "elif"
)


def _block(mode: str, name: str, command: list[str], project: str = "") -> bytes:
    """The marked sh block that starts `command + [name, "$@"]` detached."""
    program = command[0]
    if os.path.isabs(program):
        present = f"[ -x {shlex.quote(program)} ]"
    else:
        present = f"command -v {shlex.quote(program)} >/dev/null 2>&1"
    argv = " ".join(shlex.quote(part) for part in [*command, name]) + ' "$@"'
    # git runs hooks at the top of the work tree: the project's log is there.
    local = shlex.quote(os.path.join(project, ".lore", "local") if project else ".lore/local")
    missing = shlex.quote(
        f"error {name}: {program} {'is not there' if os.path.isabs(program) else 'is not on PATH'}, "
        "so the index was not refreshed; "
        "run `lore hooks install` again with the Lore you use"
    )
    text = (
        f"{_BEGIN.decode()}\n"
        "# Refreshes Lore's index in the background; never delays or fails this hook.\n"
        f"# Added by `lore hooks install` (mode: {mode}); `lore hooks uninstall` removes it.\n"
        + (f"# project: {project}\n" if project else "")
        + (_IN_A_REBASE if name == "post-commit" else "if")
        + f" {present}; then\n"
        "  (\n"
        f"    unset {_UNSET}\n"
        # What the command says before Lore runs ("No module named lore": the
        # package uninstalled, its Python still there) goes to the log.
        "    lore_log=/dev/null\n"
        f"    {{ [ -d {local} ] && [ ! -L {local} ] && [ ! -L {local}/hooks.log ] && lore_log={local}/hooks.log; }} 2>/dev/null\n"
        f'    if command -v setsid >/dev/null 2>&1; then exec setsid {argv} 2>>"$lore_log"; fi\n'
        f'    exec nohup {argv} 2>>"$lore_log"\n'
        "  ) </dev/null >/dev/null 2>&1 &\n"
        "else\n"
        f"  {{ [ -d {local} ] && [ ! -L {local} ] && [ ! -L {local}/hooks.log ] && "
        f'echo "$(date +%Y-%m-%dT%H:%M:%S)" {missing} >>{local}/hooks.log; }} 2>/dev/null || :\n'
        "fi\n"
        f"{_END.decode()}\n"
    )
    return os.fsencode(text)


def _is_shell_script(data: bytes) -> bool:
    """True for a hook our sh block can go into: a shell shebang, or text without one."""
    if b"\0" in data[:8192]:
        return False
    first = data.split(b"\n", 1)[0]
    if not first.startswith(b"#!"):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True  # git runs a hook without a shebang with /bin/sh
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return False
    interpreter = os.path.basename(words[0])
    if interpreter == "env":
        names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        interpreter = os.path.basename(names[0]) if names else ""
    return interpreter in _SHELLS


# -- uninstalling -------------------------------------------------------------


def _uninstall_hook(path: Path, project: str) -> bool:
    data = _read(path)
    if data is None:
        return False
    blocks = _blocks(data)
    found = next((block for block in blocks if block.project == project), None)
    if found is None:
        return False
    start, end, mode = found.start, found.end, found.mode
    heirs = [block for block in blocks if block is not found]
    if heirs:  # other projects' blocks stay; the next one inherits how the hook was changed
        heir = heirs[0]
        remaining = data[:start] + data[end:]
        if mode not in (None, _INSERTED):
            shift = end - start if heir.start > start else 0
            mode_at = _MODE.search(remaining, heir.start - shift, heir.end - shift)
            if mode_at is not None:
                remaining = remaining[: mode_at.start(1)] + mode.encode() + remaining[mode_at.end(1) :]
        _write(path, remaining, stat.S_IMODE(path.stat().st_mode))
        return True
    if mode == _WRAPPER:
        chained = path.with_name(path.name + _CHAINED)
        if os.path.lexists(chained):
            os.replace(chained, path)
        else:
            path.unlink()
        return True
    if mode == _INSERTED_NL and data[start - 1 : start] == b"\n":
        start -= 1
    remaining = data[:start] + data[end:]
    if mode == _CREATED and remaining == _CREATED_HEADER:
        path.unlink()
    else:
        _write(path, remaining, stat.S_IMODE(path.stat().st_mode))
    return True


# -- files --------------------------------------------------------------------


@dataclass(frozen=True)
class _Block:
    start: int
    end: int  # past its last newline
    mode: str | None
    project: str  # "" for the project at the top of the work tree


def _find_block(data: bytes | None, project: str) -> _Block | None:
    """The project's block in a hook's bytes."""
    if data is None:
        return None
    return next((block for block in _blocks(data) if block.project == project), None)


def _blocks(data: bytes) -> list[_Block]:
    """Every Lore block in a hook's bytes, in order."""
    blocks: list[_Block] = []
    position = 0
    while True:
        if data.startswith(_BEGIN + b"\n", position) and (
            position == 0 or data[position - 1 : position] == b"\n"
        ):
            start = position
        else:
            start = data.find(b"\n" + _BEGIN + b"\n", max(position - 1, 0))
            if start == -1:
                return blocks
            start += 1
        close = data.find(b"\n" + _END, start)
        following = data.find(b"\n" + _BEGIN + b"\n", start)
        if close == -1 or -1 < following < close:
            raise LoreError(
                "a git hook has Lore's opening marker (# >>> lore >>>) but not its "
                "closing one (# <<< lore <<<); delete the damaged block by hand, "
                "then run `lore hooks install` again"
            )
        end = close + 1 + len(_END)
        if data[end : end + 1] == b"\n":
            end += 1
        mode = _MODE.search(data, start, close)
        blocks.append(
            _Block(start, end, mode.group(1).decode() if mode else None, _project_of(data[start:close]))
        )
        position = end


def _project_of(block: bytes) -> str:
    """The project a block refreshes: its `# project:` line; a block written
    before those lines existed names it only in its command (`--project`)."""
    marked = _PROJECT.search(block)
    if marked:
        return os.fsdecode(marked.group(1))
    for line in block.decode("utf-8", "surrogateescape").splitlines():
        line = line.strip()
        if line.startswith("exec nohup "):
            try:
                argv = shlex.split(line.removeprefix("exec nohup "))
            except ValueError:
                return ""
            if "--project" in argv[:-1]:
                return argv[argv.index("--project") + 1]
    return ""


def _read(path: Path) -> bytes | None:
    """A hook's bytes, or None when there is no hook (a dangling symlink counts as one)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b"" if path.is_symlink() else None
    except IsADirectoryError:
        raise LoreError(f"{path} is a directory, not a hook; move it away and install again") from None


def _write(path: Path, data: bytes, mode: int) -> None:
    """Replace `path` atomically, so git never runs a half-written hook."""
    atomic.write_atomic(path, data, mode=mode, sync=False)


def _temporary(path: Path, data: bytes, mode: int) -> Path:
    return atomic.temporary(path.parent, data, mode=mode, sync=False, prefix=f".{path.name}.")


# -- coalescing ---------------------------------------------------------------


def run_coalesced(lock_dir: Path, job: Callable[[], None]) -> bool:
    """Run `job` unless another process is running it; then make sure it runs again.

    At most one `job` runs at a time across processes (an flock on
    `lock_dir/update.lock`), and no trigger is lost: a trigger first leaves a
    "pending" mark, then tries the lock without waiting. If the lock is busy it
    returns False at once; the holder, after each run, releases the lock and
    runs again if a mark appeared meanwhile. A mark is consumed just before a
    run starts, so every run sees every request made before it began.

    Why nothing is lost: a trigger's mark is set before its lock attempt. If
    the attempt fails, some holder has the lock; that holder checks for marks
    after releasing it and, if the re-lock fails, the new holder acquired the
    lock after the mark was set and either consumes it or checks it in turn.

    If `job` raises, the mark is put back (the request is still open) and the
    exception propagates; the next trigger retries.

    Returns True if this process ran `job` at least once.
    """
    import fcntl  # POSIX only; imported here so installing hooks works everywhere

    lock_dir = Path(lock_dir)
    lock_dir.mkdir(parents=True, exist_ok=True)
    pending = lock_dir / _PENDING_FILE
    _mark(pending)
    ran = False
    while True:
        descriptor = os.open(lock_dir / _LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return ran  # the holder will see our mark
            if _consume(pending):
                try:
                    job()
                except BaseException:
                    _mark(pending)
                    raise
                ran = True
        finally:
            os.close(descriptor)  # releases the lock
        if not pending.exists():
            return ran


def update_holding(lock_dir: Path) -> bool:
    """Whether a background update holds its lock right now (a pending mark alone,
    which a killed run may leave, does not count)."""
    import fcntl

    try:
        descriptor = os.open(Path(lock_dir) / _LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)  # (a shared lock taken is let go with it)
    return False


def update_running(lock_dir: Path) -> bool:
    """Whether a background update (:func:`run_coalesced`, a git hook's) is running
    or waiting to run; nothing is created to find out."""
    return (Path(lock_dir) / _PENDING_FILE).exists() or update_holding(lock_dir)


def _mark(pending: Path) -> None:
    os.close(os.open(pending, os.O_WRONLY | os.O_CREAT, 0o644))


def _consume(pending: Path) -> bool:
    try:
        pending.unlink()
    except FileNotFoundError:
        return False
    return True
