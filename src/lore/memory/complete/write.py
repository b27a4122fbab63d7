"""Writing the task's memory: the body rendered from bundle and git, through :class:`Memories`."""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import TYPE_CHECKING, Any

from lore import secrets
from lore.memory.complete.bundle import CompletionBundle
from lore.memory.complete.changes import task_changes
from lore.memory.complete.render import merged_into, render_body

if TYPE_CHECKING:
    from lore.memory.repository import AddResult, Memories

# The frontmatter field holding a digest of the body this command last wrote:
# a body that no longer matches it was edited, and is added to, not rewritten.
WRITTEN_FIELD = "completion_digest"


def body_digest(body: str) -> str:
    """A short digest of a body, blind to the spaces and newlines around it."""
    return hashlib.sha256(body.strip().encode()).hexdigest()[:16]


def complete_task(
    memories: Memories, task: str, *, title: str, bundle: CompletionBundle | None = None
) -> AddResult:
    """000's write-on-complete: write (or rewrite) the task's memory.

    Its body has 000's sections, its files come from the task's commits (or
    the work tree); commit text carried into it is redacted like any other
    input. Idempotent per task: a second call rewrites the same memory, its
    summary and approach the new ones, its decisions, lessons, patterns and
    gotchas the earlier ones and the new (a rewrite dropped what an earlier
    completion had said). A body someone edited since is not rewritten: the
    new completion's items are added to it (:func:`merged_into`).
    """
    from dataclasses import replace

    from lore.memory.complete.render import kept_items
    from lore.memory.model import derive_keywords

    bundle = bundle or CompletionBundle()
    changes = task_changes(memories.project.root, task)
    # Looked up and written under the lock every memory write takes: two
    # completions of a task at once write one memory (the later rewrites it),
    # as one after the other do, and an edit cannot land between read and write.
    with memories.writing():
        memories.sync()
        existing = [
            m
            for m in memories.store.memories(memories.filter(task=task, types=["summary"]))
            if m.visibility == "shared"
        ]
        current = memories.load(existing[0].path) if existing else None
        if current is not None:
            earlier = kept_items(current.body)
            merged: dict[str, Any] = {f: [*earlier[f], *getattr(bundle, f)] for f in earlier}
            bundle = replace(bundle, **merged)
        body, found = secrets.redact(render_body(bundle, changes))
        # What this command writes of its own: a body that differs from it later was edited.
        written = {WRITTEN_FIELD: body_digest(body)}
        if current is not None and current.extra.get(WRITTEN_FIELD) != body_digest(current.body):
            # Edited since this command wrote it (or written before it kept a
            # digest): the edited text stays, the new completion adds to it.
            body = merged_into(current.body, body)
        fields: dict[str, Any] = dict(
            tags=bundle.tags or derive_keywords(title, body),
            files=changes.files,
            labels=bundle.labels,
            project=memories.project.root.name,
            priority=bundle.priority,
            risk=bundle.risk,
            task_type=bundle.task_type,
        )
        if current is None:
            result = memories.add(body=body, title=title, type="summary", task=task, extra=written, **fields)
        else:
            result = memories.update(existing[0].path, body=body, title=title, extra=written, **fields)
    result.redacted = dict(found + Counter(result.redacted))  # the body's secrets too, said like any write's
    return result
