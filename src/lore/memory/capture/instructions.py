"""The instructions block Lore adds to CLAUDE.md / AGENTS.md: how an agent
without MCP records what it learned (the `<lore-memory>` block capture reads)."""

# The markers around the block in Markdown instruction files (the installers
# write them; `lore import` leaves what is between them out).
MD_BEGIN = "<!-- lore:begin -->"
MD_END = "<!-- lore:end -->"

INSTRUCTIONS = """\
## Project memory (Lore)

This project keeps lasting knowledge in Lore (Markdown files in `.lore/memory/`).

**Search before you explore.** Before reading code or asking the user, search:
MCP tools `memory_search` / `search_memories` for memories and `search_codebase`
for code, or `lore search "<query>"` and `lore code "<query>"` in a shell.
Search returns summaries and ids; read in full (`memory_read`, `lore show <id>`)
only the few you need. Never load every memory.

**Write what lasts.** When you learn something a future session will need, save
it with `memory_write` / `add_memory` (or `lore add`): a decision and why, a
convention, a gotcha, a lesson from a failure, how the parts fit together. One
idea per memory, with a clear title and a few keywords. Don't save transient
state ("user just asked X", "tests are running"), task progress, or secrets.

- `type`: decision, pattern, convention, lesson, architecture, warning,
  preference, gotcha, fact, summary
- `applies_to`: `global`, `file:<path>` or `area:<name>`

**Finish each task** with `lore complete <task-id> --title "<task title>" --summary
"<what was done>"` to record what was done.

**No MCP tools?** Print each memory in a block like this; Lore reads them from your output:

```text
<lore-memory type="gotcha" tags="auth,jwt" applies_to="file:src/auth.py" title="JWT secret must be base64">
Token validation fails silently when JWT_SECRET contains special characters.
Use a base64-encoded secret.
</lore-memory>
```
"""
