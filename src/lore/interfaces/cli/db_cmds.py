"""`lore db`: the index database — schema upgrades, status, projects, moving between backends."""

from __future__ import annotations

from typing import Any

import click

from lore.interfaces.cli.common import json_option, project_of
from lore.interfaces.cli.output import emit_json, table, warn

database_option = click.option(
    "--database",
    "database_url",
    metavar="URL",
    default=None,
    help="postgresql://… (wins over LORE_DATABASE_URL and [index] database_url).",
)


def _project(ctx: click.Context, project_path: str | None, *, required: bool = True):
    from lore.errors import ProjectNotFound
    from lore.project import Project

    try:
        return Project.find(project_of(ctx, project_path))
    except ProjectNotFound:
        if required:
            raise
        return None


def use_database(database_url: str | None) -> None:
    """A URL given to a command (`--database`) wins, for this process, as
    LORE_DATABASE_URL would (checked when the store opens)."""
    import os

    if database_url:
        os.environ["LORE_DATABASE_URL"] = database_url


def _open(ctx, project_path, database_url):
    """The service over the chosen database."""
    from lore.service import Lore

    use_database(database_url)
    return Lore(_project(ctx, project_path))


def _db_options(fn: Any) -> Any:
    """The options every `lore db` command takes: --database, --project, --json."""
    fn = click.pass_context(fn)
    fn = json_option(fn)
    fn = click.option("--project", "project_path", metavar="PATH", default=None, help="Project folder.")(fn)
    return database_option(fn)


@click.group()
def db():
    """The index database: upgrade its schema, show its status, export and import a project.

    SQLite (.lore/index.db) is the default; a team shares PostgreSQL with
    LORE_DATABASE_URL=postgresql://… or [index] backend = "postgres" (docs/postgres.md).

    \b
    Examples:
      lore db status
      LORE_DATABASE_URL=postgresql://alice@db/lore lore db upgrade
      lore db export /tmp/project-index.json
    """


@db.command()
@_db_options
def upgrade(ctx, database_url, project_path, as_json):
    """Create or upgrade the database schema (safe to run from two machines at once)."""
    import os

    from lore.storage import upgrade_database

    # An administrator with no clone at hand names the database by --database or LORE_DATABASE_URL.
    given = database_url or os.environ.get("LORE_DATABASE_URL") or None
    project = _project(ctx, project_path, required=given is None)
    report = upgrade_database(project, database_url if project is not None else given)
    if as_json:
        emit_json(report)
    elif report["backend"] == "sqlite":
        click.echo(f"sqlite index {report['path']} at schema version {report['schema_version']}")
    elif report["from_version"] == report["schema_version"]:
        click.echo(f"{report['database']} already at schema version {report['schema_version']}")
    else:
        click.echo(
            f"upgraded {report['database']} from schema version {report['from_version']} "
            f"to {report['schema_version']}"
        )


@db.command()
@_db_options
def status(ctx, database_url, project_path, as_json):
    """Backend, schema version, and each clone's index status per source (pending, indexing, completed, failed)."""
    from lore.storage import database_status

    report = database_status(_project(ctx, project_path), database_url)
    if as_json:
        emit_json(report)
        return
    if report["backend"] == "sqlite":
        click.echo(f"sqlite: {report['path']} (schema version {report['schema_version']})")
    else:
        project = report["project"]
        click.echo(
            f"postgres: {report['database']} as {report['user']} (schema version {report['schema_version']})\n"
            f"project: {project['name']} ({project['id']})"
        )
        rows = [
            [
                f"{clone['host']}:{clone['repo_path']}" + (" *" if clone["id"] == report["clone_id"] else ""),
                source["kind"],
                source["status"],
                source["last_indexed_at"] or "-",
                (source["last_commit_hash"] or "-")[:12],
                str(source["total_files"]),
                source["error_message"] or "",
            ]
            for clone in report["clones"]
            for source in clone["sources"]
            or [
                {
                    "kind": "-",
                    "status": "pending",
                    "last_indexed_at": None,
                    "last_commit_hash": None,
                    "total_files": 0,
                    "error_message": None,
                }
            ]
        ]
        table(["clone", "source", "status", "last indexed", "commit", "files", "error"], rows)
        server = report["server"]
        if server["chunks_bytes"] > server["shared_buffers_bytes"]:
            from lore.interfaces.units import file_size

            click.echo(
                f"note: the chunks table and its indexes take {file_size(server['chunks_bytes'])}, more than the "
                f"server's shared_buffers ({file_size(server['shared_buffers_bytes'])}): searches read them from "
                "the OS cache, up to twice as slow; raise shared_buffers (docs/postgres.md, Server settings)"
            )
    counts = report["counts"]
    click.echo(
        f"{counts['memories']} memories, {counts['code_files']} code files ({counts['code_chunks']} chunks), "
        f"{counts['commits']} commits"
    )


@db.command()
@_db_options
def projects(ctx, database_url, project_path, as_json):
    """The projects sharing this database (their clones, memories, global memories)."""
    from lore.storage import list_projects

    found = list_projects(_project(ctx, project_path), database_url)
    if as_json:
        emit_json(found)
        return
    table(
        ["project", "id", "clones", "memories", "global"],
        [
            [
                ("* " if p["current"] else "") + p["name"],
                str(p["id"]),
                str(p.get("clones", 1)),
                str(p.get("memories", "")),
                str(p.get("global_memories", "")),
            ]
            for p in found
        ],
    )


@db.command(name="export")
@click.argument("target", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Replace TARGET if it exists.")
@_db_options
def export_cmd(ctx, target, force, database_url, project_path, as_json):
    """Write this project's index (memories, code, history, vectors, anchors, access) to TARGET."""
    lore = _open(ctx, project_path, database_url)
    try:
        report = lore.export_index(target, force=force)
    finally:
        lore.close()
    if as_json:
        emit_json({"file": target, **report.to_dict()})
    else:
        click.echo(
            f"exported {report.files} files ({report.chunks} chunks), {report.vectors} vectors, "
            f"{report.anchors} anchors to {target}"
        )


@db.command(name="import")
@click.argument("source", type=click.Path(dir_okay=False))
@_db_options
def import_cmd(ctx, source, database_url, project_path, as_json):
    """Replace this project's index in the current backend with the dump in SOURCE."""
    lore = _open(ctx, project_path, database_url)
    try:
        report = lore.import_index(source)
    finally:
        lore.close()
    if as_json:
        emit_json({"file": source, **report.to_dict()})
    else:
        click.echo(
            f"imported {report.files} files ({report.chunks} chunks), {report.vectors} vectors, "
            f"{report.anchors} anchors from {source}"
        )
    if report.memories_without_file:
        count = report.memories_without_file
        warn(
            f"{count} memor{'y' if count == 1 else 'ies'} of the dump {'has' if count == 1 else 'have'} "
            "no file in this project, and the index follows the files: the next command drops "
            f"{'it' if count == 1 else 'them'}. Bring the files first (a clone of the repository for "
            ".lore/memory/, a copy of .lore/local/ for private and session memories), then import again"
        )


COMMANDS = [db]
