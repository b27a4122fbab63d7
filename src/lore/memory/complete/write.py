"""Writing the task's memory: the body rendered from bundle and git, through :class:`Memories`."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from lore import secrets
from lore.locking import file_lock
from lore.memory.complete.bundle import CompletionBundle
from lore.memory.complete.changes import task_changes
from lore.memory.complete.render import render_body

if TYPE_CHECKING:
    from lore.memory.repository import AddResult, Memories


def complete_task(
    memories: Memories, task: str, *, title: str, bundle: CompletionBundle | None = None
) -> AddResult:
    """000's write-on-complete: write (or rewrite) the task's memory.

    Its body has 000's sections, its files come from the task's commits (or
    the work tree); commit text carried into it is redacted like any other
    input. Idempotent per task: a second call rewrites the same memory, its
    summary and approach the new ones, its decisions, lessons, patterns and
    gotchas the earlier ones and the new (a rewrite dropped what an earlier
    completion had said).
    """
    from dataclasses import replace

    from lore.memory.complete.render import kept_items
    from lore.memory.model import derive_keywords

    bundle = bundle or CompletionBundle()
    changes = task_changes(memories.project.root, task)
    # Looked up and written under one lock: two completions of a task at once
    # write one memory (the later rewrites it), as one after the other do.
    with file_lock(memories.project.local_dir / ".complete.lock"):
        memories.sync()
        existing = [
            m
            for m in memories.store.memories(memories.filter(task=task, types=["summary"]))
            if m.visibility == "shared"
        ]
        if existing:
            earlier = kept_items(memories.load(existing[0].path).body)
            merged: dict[str, Any] = {f: [*earlier[f], *getattr(bundle, f)] for f in earlier}
            bundle = replace(bundle, **merged)
        body, found = secrets.redact(render_body(bundle, changes))
        fields: dict[str, Any] = dict(
            tags=bundle.tags or derive_keywords(title, body),
            files=changes.files,
            labels=bundle.labels,
            project=memories.project.root.name,
            priority=bundle.priority,
            risk=bundle.risk,
            task_type=bundle.task_type,
        )
        if not existing:
            result = memories.add(body=body, title=title, type="summary", task=task, **fields)
        else:
            result = memories.update(existing[0].path, body=body, title=title, **fields)
    result.redacted = dict(found + Counter(result.redacted))  # the body's secrets too, said like any write's
    return result
