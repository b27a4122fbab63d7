"""Git hook commands: install, uninstall, and the background updater they start."""

from __future__ import annotations

import os
import sys
import time

import click

from lore.interfaces.cli.common import json_option, project_of
from lore.interfaces.cli.output import emit_json


@click.group()
def hooks():
    """Keep the index fresh from git hooks (post-commit, -merge, -checkout, -rewrite).

    \b
    Examples:
      lore hooks install
      lore hooks status
      lore hooks uninstall
    """


_PROJECT = click.option(
    "--project",
    "project_path",
    metavar="PATH",
    default=None,
    help="Project folder (default: nearest folder with .lore/, like git).",
)


def _root(ctx, project_path: str | None = None) -> object:
    """The project's folder, which git hooks need to be in a repository."""
    from lore.errors import UsageError
    from lore.index import gitrepo
    from lore.project import Project

    root = Project.find(project_of(ctx, project_path)).root
    if gitrepo.repo_root(root) is None:
        raise UsageError(
            f"{root} is not in a git repository, so it has no git hooks; for a repository in a "
            "folder of it, run `lore init` in that repository to give it a project of its own"
        )
    return root


@hooks.command()
@_PROJECT
@json_option
@click.pass_context
def install(ctx, project_path, as_json):
    """Install the hooks (chained with any existing ones)."""
    from lore.index import githooks

    root = _root(ctx, project_path)
    changed = githooks.install(root, hook_command(root))
    shared = _shared_hooks_dir(root)
    if shared is not None:
        from lore.interfaces.cli.output import warn

        warn(
            f"note: git reads hooks from {shared} (core.hooksPath), outside this repository: "
            "every repository using that folder runs them, and `lore hooks uninstall` in any "
            "of them removes them"
        )
    in_tree = _work_tree_hooks_dir(root)
    if in_tree is not None and changed:
        from lore.interfaces.cli.output import warn

        warn(
            f"note: git reads hooks from {in_tree}/ (core.hooksPath), a folder of the repository: "
            "the hooks now name this machine's Lore, so commit them only if every clone runs Lore "
            f"from the same place (`git diff {in_tree}` shows the change; `lore hooks uninstall` takes it out)"
        )
    if as_json:
        emit_json({"installed": changed})
    else:
        click.echo(f"installed: {', '.join(changed)}" if changed else "hooks already installed")


@hooks.command()
@_PROJECT
@json_option
@click.pass_context
def uninstall(ctx, project_path, as_json):
    """Remove exactly what `lore hooks install` added."""
    from lore.index import githooks

    removed = githooks.uninstall(_root(ctx, project_path))
    if as_json:
        emit_json({"removed": removed})
    else:
        click.echo(f"removed: {', '.join(removed)}" if removed else "no Lore hooks installed")


@hooks.command()
@_PROJECT
@json_option
@click.pass_context
def status(ctx, project_path, as_json):
    """Whether each hook holds this project's block, and where git reads hooks."""
    from lore.index import githooks, gitrepo

    root = _root(ctx, project_path)
    states = githooks.states(root, hook_command(root))
    directory = str(gitrepo.hooks_dir(root))
    if as_json:
        emit_json({"hooks_dir": directory, "hooks": states})
        return
    click.echo(f"hooks folder: {directory}")
    width = max(map(len, states))
    for name, state in states.items():
        click.echo(f"{name:<{width}}  {state}")
    if "outdated" in states.values():
        click.echo("outdated: installed by another Python or an older Lore; run `lore hooks install`")
    elif "missing" in states.values():
        click.echo("missing: run `lore hooks install` to keep the index fresh")


# -P: git runs hooks at the top of the work tree, where a lore.py or lore/ of the
# repository would otherwise be imported instead of Lore.
HOOK_COMMAND = [sys.executable, "-P", "-m", "lore", "hooks", "run"]


def hook_command(root) -> list[str]:
    """:data:`HOOK_COMMAND` for the project at `root`. git runs hooks at the top
    of the work tree, so a project in a folder of it (`lore init --here`) is
    named with `--project`, relative to that top: the same in every worktree."""
    from lore.index.githooks import project_folder

    folder = project_folder(root)
    if not folder:
        return HOOK_COMMAND
    program, verbs = HOOK_COMMAND[:4], HOOK_COMMAND[4:]
    return [*program, "--project", folder, *verbs]


@hooks.command(name="run", hidden=True)
@click.argument("hook")
@click.argument("args", nargs=-1)
@click.pass_context
def run(ctx, hook, args):
    """Run by the hooks in the background: one updater at a time, no trigger lost."""
    from pathlib import Path

    from lore.index.githooks import run_coalesced
    from lore.project import LORE_DIR
    from lore.service import Lore

    start = ctx.obj.get("project") or "."
    if not (Path(start) / LORE_DIR).is_dir():
        # git runs hooks at the top of the work tree, where the block's project
        # is: a worktree or clone nested in a project's folder, without a
        # .lore/ of its own, must not refresh the project around it.
        return
    try:
        lore = Lore.open(start)
    except Exception as err:
        # Nobody sees this process's output: say it where the hooks' lines go.
        log = Path(start) / LORE_DIR / "local" / "hooks.log"
        _log(Path(start), log, f"error {hook}: {err}; the index was not refreshed")
        if os.environ.get("LORE_DEBUG", "") not in ("", "0"):
            raise
        ctx.exit(1)  # said once, in the log (the hook sends this process's stderr there too)
    log = lore.project.local_dir / "hooks.log"
    _renew_hooks(lore.project.root)

    def job():
        started = time.time()
        try:
            result = lore.refresh()
            line = (
                f"ok {hook}: {result['code']['files_processed']} files, "
                f"{result['code']['files_removed']} removed, {result['embedded']} embedded"
            )
        except Exception as err:
            line = f"error {hook}: {err}"
        _log(lore.project.root, log, f"{line} ({time.time() - started:.2f} s)")

    try:
        lore.project.check_folder(lore.project.local_dir)  # its lock and log are written there
        run_coalesced(lore.project.local_dir, job)
    finally:
        lore.close()


def _shared_hooks_dir(root):
    """The hooks folder when it is outside the repository (a global or shared
    core.hooksPath, used by other repositories too); None when it is its own."""
    import os

    from lore.index import gitrepo

    directory = os.path.realpath(gitrepo.hooks_dir(root))
    common = gitrepo.run_git(root, "rev-parse", "--path-format=absolute", "--git-common-dir", check=False)
    owned = [os.path.realpath(str(gitrepo.repo_root(root)))]
    if common.returncode == 0:
        owned.append(os.path.realpath(os.fsdecode(common.stdout.strip())))
    if any(directory == place or directory.startswith(place + os.sep) for place in owned):
        return None
    return directory


def _work_tree_hooks_dir(root) -> str | None:
    """The hooks folder, relative to the repository's top, when it is a folder of
    the work tree (a team's committed `.githooks/`), not of git's own."""
    import os

    from lore.index import gitrepo

    directory = os.path.realpath(gitrepo.hooks_dir(root))
    top = gitrepo.repo_root(root)
    common = gitrepo.run_git(root, "rev-parse", "--path-format=absolute", "--git-common-dir", check=False)
    if top is None or common.returncode != 0:
        return None
    top_real, git_dir = os.path.realpath(str(top)), os.path.realpath(os.fsdecode(common.stdout.strip()))
    if directory == git_dir or directory.startswith(git_dir + os.sep):
        return None
    if directory.startswith(top_real + os.sep):
        return os.path.relpath(directory, top_real)
    return None


def _log(root, log, line: str) -> None:
    from lore.atomic import append_line

    append_line(root, log, f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}")


def _renew_hooks(root) -> None:
    """Hooks installed by an older Lore ran `python -m lore` without -P: bring
    their block up to date (nothing is written when it already is). A hook
    someone took Lore out of, or a hook manager wrote anew, stays as it is."""
    from lore.errors import LoreError
    from lore.index import githooks

    try:
        githooks.install(root, hook_command(root), only_present=True)
    except (OSError, LoreError):
        pass  # a hook that can't be rewritten keeps working as it is


COMMANDS = [hooks]
