"""Lifecycle commands: consolidate, review, import."""

from __future__ import annotations

import math
import sys

import click

from lore.interfaces.cli.common import json_option, with_lore
from lore.interfaces.cli.output import echo, emit_json, is_terminal, printable, warn


def _finite_days(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A number of days a date can be computed from (no nan, at most 100 years)."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter("must be a number of days, e.g. 30")
    return value


@click.command()
@click.option(
    "--recent",
    "recent_days",
    type=click.FloatRange(min=0, max=36500),
    callback=_finite_days,
    help="Only memories of the last N days.",
)
@json_option
@with_lore
def consolidate(lore, recent_days, as_json):
    """Merge near-duplicates, find contradictions and supersession, propose promotions.

    \b
    Examples:
      lore consolidate
      lore consolidate --recent 7
    """
    report = lore.consolidate(recent_days=recent_days)
    if as_json:
        emit_json(report.to_dict())
        return
    opened = sum(p["status"] == "open" for p in report.proposals)
    click.echo(
        f"checked {report.checked} memories: {len(report.merged)} merged, {len(report.archived)} archived, "
        f"{len(report.proposals)} proposals ({opened} open, {len(report.proposals) - opened} held), "
        f"{len(report.tiers_moved)} tier changes"
    )
    for proposal in report.proposals:
        echo(f"  {proposal['id']}  {proposal['status']:<5} {proposal['kind']:<13} {proposal['title']}")
    if opened:
        click.echo("review them with `lore review`")


@click.command()
@click.option("--apply", "apply_id", metavar="ID", help="Apply this proposal.")
@click.option("--reject", "reject_id", metavar="ID", help="Reject this proposal (it is not proposed again).")
@click.option("--all", "show_all", is_flag=True, help="Held proposals too (not enough evidence yet).")
@json_option
@with_lore
def review(lore, apply_id, reject_id, show_all, as_json):
    """Show proposed changes as diffs; apply or reject them (interactive on a terminal).

    \b
    Examples:
      lore review
      lore review --apply 2b7c --json
    """
    from lore.errors import UsageError

    if apply_id is not None and reject_id is not None:
        raise UsageError("give --apply ID or --reject ID, not both")
    if apply_id is not None or reject_id is not None:  # an empty ID ("$ID" unset) is an error, not a listing
        done = lore.apply_proposal(apply_id) if apply_id is not None else lore.reject_proposal(reject_id)
        if as_json:
            emit_json(done.to_dict())
        else:
            echo(f"{done.status} {done.id}: {done.title}")
        return
    found = lore.proposals(include_held=show_all)
    if as_json:
        emit_json([p.to_dict() for p in found])
        return
    if not found:
        click.echo("nothing to review" + ("" if show_all else " (held proposals: --all)"))
        return
    interactive = sys.stdin is not None and sys.stdin.isatty() and is_terminal()
    for proposal in found:
        _show(proposal)
        if not interactive or proposal.status != "open" or proposal.outdated:
            continue
        choice = click.prompt(
            "apply, reject, skip or quit?",
            type=click.Choice(["a", "r", "s", "q"]),
            default="s",
            show_choices=True,
        )
        if choice == "q":
            return
        if choice in ("a", "r"):
            done = lore.apply_proposal(proposal.id) if choice == "a" else lore.reject_proposal(proposal.id)
            click.echo(f"{done.status} {done.id}")
    if not interactive:
        click.echo("apply one with `lore review --apply ID`, or drop it with `lore review --reject ID`")


def _show(proposal) -> None:
    """One proposal for a person: its text escaped (memory text is anyone's),
    then coloured (the escapes are ours)."""
    color = is_terminal()
    heading = printable(f"{proposal.id}  {proposal.kind}  [{proposal.status}]  {proposal.title}")
    click.echo(click.style(heading, bold=True) if color else heading)
    echo(f"  why: {proposal.reason}")
    click.echo(f"  confidence {proposal.confidence:.2f}, evidence {proposal.evidence}")
    if proposal.held_because:
        echo(f"  held: {proposal.held_because}")
    if proposal.outdated:
        click.echo("  outdated: a file changed since; `lore consolidate` proposes again")
    for line in printable(proposal.diff).splitlines():
        if color and line.startswith("+") and not line.startswith("+++"):
            line = click.style(line, fg="green")
        elif color and line.startswith("-") and not line.startswith("---"):
            line = click.style(line, fg="red")
        click.echo(f"  {line}")
    click.echo()


@click.command(name="import")
@click.argument("path", type=click.Path(exists=False))
@click.option("--dry-run", is_flag=True, help="List what would be created; write nothing.")
@click.option(
    "--tier",
    type=click.Choice(["durable", "daily", "session"]),
    default="durable",
    show_default=True,
    help="Tier of the memories created (a .chati/memories folder keeps its own tiers).",
)
@json_option
@with_lore
def import_(lore, path, dry_run, tier, as_json):
    """Import Markdown notes, AGENTS.md/CLAUDE.md, ADRs, .chati/memories or memory/ (idempotent).

    \b
    Examples:
      lore import AGENTS.md
      lore import docs/adr --dry-run
    """
    report = lore.import_notes(path, dry_run=dry_run, tier=tier)
    if as_json:
        emit_json(report.to_dict())
        return
    for item in report.items:
        echo(f"{item.status:<12} {item.type:<12} {item.title}  ← {item.source}")
    for problem in report.problems:
        warn(problem)
    verb = "would create" if dry_run else "created"
    changed = f", {report.changed} changed at the source" if report.changed else ""
    skipped = len(report.problems) - report.changed
    click.echo(f"{verb} {report.created}, {report.existing} already there{changed}, {skipped} skipped")


COMMANDS = [consolidate, review, import_]
