"""Agent integrations: installing Lore into coding agents, and capturing what they learn.

- :mod:`lore.integrations.agents` -- edit Claude Code, Codex and Cursor config
  files (MCP server, hooks, instructions block), and undo it.
- :mod:`lore.memory.capture.parse` -- turn transcripts and printed
  ``<lore-memory>`` blocks into memory candidates; spot repeated errors.

Pure library code: the CLI (`lore install`, `lore hook ...`) and the MCP
server call these and decide what to store.
"""

from __future__ import annotations

from lore.errors import ConfigError
from lore.integrations.agents import AGENTS, install, uninstall
from lore.memory.capture.instructions import INSTRUCTIONS
from lore.memory.capture.parse import Candidate, from_stdout, from_transcript, repeated_errors

__all__ = [
    "AGENTS",
    "INSTRUCTIONS",
    "ConfigError",
    "install",
    "uninstall",
    "Candidate",
    "from_stdout",
    "from_transcript",
    "repeated_errors",
]
