"""`python -m lore` (used by git hooks, which may not have `lore` on PATH)."""

from lore.interfaces.warm import run

run()
