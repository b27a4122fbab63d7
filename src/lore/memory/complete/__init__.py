"""Task memories at completion time (seed 000's `/jat:complete` step).

When an agent finishes a task, two things describe the work: the agent's
*completion bundle* (summary, approach, decisions, lessons, cross-agent intel)
and *git* (the task's commits, the files they changed, the decisions their
messages state). The package reads both and renders the Markdown body of a
000-style task memory, with 000's sections and source mapping:

=====================  =========================================================
section                generated from
=====================  =========================================================
``## Summary``         bundle summary; else the task's commit subjects
``## Approach``        bundle approach; else a one-line account of the commits
``## Decisions``       bundle decisions, then decisions mined from commit messages
``## Key Files``       bundle ``crossAgentIntel.files``, then the git diff
``## Lessons``         bundle lessons and ``crossAgentIntel.gotchas``
``## Cross-Agent Intel``  ``### Patterns`` and ``### Gotchas``
=====================  =========================================================

A task's commits are those reachable from HEAD whose message mentions the task
id as a whole word (``jat-abc``, ``[jat-abc]``, ``jat-abc:``; not ``jat-abcd``
or the child task ``jat-abc.1``). When there are none, the uncommitted work
tree (staged, unstaged and untracked) is taken as the task's work.

Frontmatter (task, agent, files, tags, ...) is the caller's job; this package
only produces the body and the facts to fill it.

Modules: ``bundle`` (reading the agent's JSON), ``changes`` (the task's
commits or uncommitted work, via :mod:`lore.index.gitrepo`), ``diff`` (per-file
statistics from patches), ``decisions`` (decisions stated in commit messages),
``render`` (the Markdown body); ``text`` holds the list-item rules they share.
"""

from lore.memory.complete.bundle import CompletionBundle, load_bundle
from lore.memory.complete.changes import TaskChanges, task_changes
from lore.memory.complete.decisions import mine_decisions, strip_task_id
from lore.memory.complete.render import render_body
from lore.memory.complete.write import complete_task

__all__ = [
    "CompletionBundle",
    "TaskChanges",
    "complete_task",
    "load_bundle",
    "mine_decisions",
    "render_body",
    "strip_task_id",
    "task_changes",
]
