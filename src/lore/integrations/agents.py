"""Installing Lore into coding agents' config files, and taking it out again.

What each agent gets (``command`` is how to run lore, e.g. ``["lore"]``):

===============  ==========================================================
``claude-code``  ``.mcp.json``: ``mcpServers.lore`` = ``{command, args: [..., "mcp"]}``;
                 ``.claude/settings.json``: SessionStart, UserPromptSubmit,
                 PostToolUse, PreCompact, Stop and SessionEnd hooks running ``<lore> hook
                 session-start|user-prompt-submit|post-tool-use|pre-compact|stop``;
                 ``CLAUDE.md`` block with ``instructions=True``.
``codex``        ``$CODEX_HOME/config.toml`` (default ``~/.codex``): a delimited
                 ``[mcp_servers.lore]`` table with ``cwd`` and
                 ``env.LORE_PROJECT`` set to the project; ``AGENTS.md`` block.
``cursor``       ``.cursor/mcp.json``: ``mcpServers.lore``; ``AGENTS.md`` block.
===============  ==========================================================

Every edit is a merge: other servers, hooks, keys, tables and comments are
kept, installing twice changes nothing, and uninstalling removes exactly what
Lore added (plus any container its removal left empty, and a file whose whole
content was Lore's). JSON is rewritten in the file's own indentation; TOML
and Markdown are edited as text, never re-serialised.

Byte for byte: ``install`` remembers each file's bytes before its first
change (``.lore/local/install-originals.json``, owner-only; a file holding a
credential is never copied there). When ``uninstall`` takes
out the last of Lore's additions from a file nobody has edited since Lore
wrote it, the remembered bytes come back exactly (style, spacing, final
newline and all); a file edited in between gets the merge described above.
Writes are atomic (temp file + rename) and follow symlinks; a file Lore
cannot parse is reported and never overwritten.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NotRequired, TypeAlias, TypedDict

from lore import atomic
from lore.errors import ConfigError, LoreError, NotFound, UsageError, ValidationError
from lore.memory.capture.instructions import INSTRUCTIONS, MD_BEGIN, MD_END
from lore.records import datarecord

# Agent configs are small; the cap keeps a huge file (or a mistake) from being read whole.
MAX_CONFIG_BYTES = 64 * 1024 * 1024

AGENTS = ("claude-code", "codex", "cursor")
SERVER_NAME = "lore"

# Claude Code hook events Lore listens to -> the `lore hook` sub-command each runs.
HOOK_EVENTS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "user-prompt-submit",  # these three record the session (lore.sessions)
    "PostToolUse": "post-tool-use",
    "PreCompact": "pre-compact",
    "Stop": "stop",
    "SessionEnd": "session-end",  # the last of it recorded, and captured (not ended: it may be resumed)
}
# Events whose hooks take a matcher ("" = every source: startup/resume/clear/compact,
# manual/auto; every tool). UserPromptSubmit and Stop have none, so the field is left
# out, as Claude Code documents.
_MATCHER_EVENTS = ("SessionStart", "PostToolUse", "PreCompact")

TOML_BEGIN = "# lore:begin"
TOML_NOTE = "(managed by `lore install codex`; `lore uninstall codex` removes it)"
TOML_END = "# lore:end"

#: A JSON config file's top-level object (an agent's own format: checked where edited).
JsonDoc: TypeAlias = dict[str, Any]


def install(agent: str, root: Path, *, command: list[str], instructions: bool = False) -> list[str]:
    """Install Lore into `agent`'s config for the project at `root`.

    Args:
        agent: one of :data:`AGENTS`.
        root: the project root (the folder holding `.lore/`).
        command: how to run lore, e.g. ``["lore"]`` or ``[sys.executable, "-m", "lore"]``.
        instructions: also add (or refresh) the Lore block in CLAUDE.md / AGENTS.md.

    Returns:
        One human-readable line per file changed; ``[]`` if everything was already in place.
    """
    agent = _check_agent(agent)
    root = _check_root(root)
    if not command or not all(isinstance(part, str) and part for part in command):
        raise UsageError("command must be a non-empty list of strings, e.g. ['lore']")
    command = list(command)
    server = {"command": command[0], "args": command[1:] + ["mcp"]}
    changes: list[_Change] = []  # every file is checked before any is written
    if agent == "claude-code":
        changes += _json_edit(
            root / ".mcp.json", root, "MCP server 'lore'", lambda doc: _set_server(doc, server)
        )
        changes += _json_edit(
            root / ".claude" / "settings.json",
            root,
            "hooks " + ", ".join(HOOK_EVENTS),
            lambda doc: _set_hooks(doc, command),
        )
    elif agent == "cursor":
        changes += _json_edit(
            root / ".cursor" / "mcp.json", root, "MCP server 'lore'", lambda doc: _set_server(doc, server)
        )
    else:
        changes += _codex_install(root, command)
    if instructions:
        changes += _md_install(root / _instructions_file(agent), root)
    return _apply(changes, root, installing=True)


def uninstall(agent: str, root: Path) -> list[str]:
    """Remove what :func:`install` added for `agent` in the project at `root`.

    The instructions block in AGENTS.md is kept while the other AGENTS.md agent
    (codex or cursor) is still installed for this project.

    Returns:
        One human-readable line per file changed; ``[]`` if Lore was not installed.
    """
    agent = _check_agent(agent)
    root = _check_root(root)
    changes: list[_Change] = []
    if agent == "claude-code":
        changes += _json_edit(root / ".mcp.json", root, "MCP server 'lore'", _drop_server, removing=True)
        changes += _json_edit(
            root / ".claude" / "settings.json",
            root,
            "hooks " + ", ".join(HOOK_EVENTS),
            _drop_hooks,
            removing=True,
        )
    elif agent == "cursor":
        changes += _json_edit(
            root / ".cursor" / "mcp.json", root, "MCP server 'lore'", _drop_server, removing=True
        )
    else:
        changes += _codex_uninstall(root)
    md = root / _instructions_file(agent)
    # Another agent installed here reading the same file (AGENTS.md for codex and
    # cursor; CLAUDE.md linked to AGENTS.md, as docs/integrations.md suggests).
    other = next(
        (
            a
            for a in AGENTS
            if a != agent and _same_file(root / _instructions_file(a), md) and _is_installed(a, root)
        ),
        None,
    )
    if other:
        if _has_block(md, MD_BEGIN):
            changes.append(_Change(None, None, f"kept the Lore block in {md.name}: {other} still uses it"))
    else:
        changes += _md_uninstall(md, root)
    return _apply(changes, root, installing=False)


def hook_command(command: list[str], event: str) -> str:
    """The shell command Lore's hook for a Claude Code `event` runs."""
    return shlex.join([*command, "hook", HOOK_EVENTS[event]])


def codex_config_path() -> Path:
    """Codex's user config: ``$CODEX_HOME/config.toml``, ``~/.codex/config.toml`` by default."""
    home = os.environ.get("CODEX_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".codex") / "config.toml"


# ---------------------------------------------------------------- checks


def _check_agent(agent: str) -> str:
    if agent not in AGENTS:
        raise UsageError(f"unknown agent '{agent}'; use one of: {', '.join(AGENTS)}")
    return agent


def _check_root(root: Path) -> Path:
    root = Path(root).expanduser().resolve()
    if not root.is_dir():
        raise UsageError(f"project folder {root} does not exist")
    return root


def _instructions_file(agent: str) -> str:
    return "CLAUDE.md" if agent == "claude-code" else "AGENTS.md"


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths are one file (by name, or a link from one to the other)."""
    if a == b:
        return True
    try:
        return a.exists() and b.exists() and a.resolve() == b.resolve()
    except OSError:
        return False


def _is_installed(agent: str, root: Path) -> bool:
    """Whether `agent` still has Lore's MCP server for this project (best effort)."""
    try:
        if agent in ("cursor", "claude-code"):
            config = root / ".cursor" / "mcp.json" if agent == "cursor" else root / ".mcp.json"
            doc = _load_json(_read(config))
            servers = doc.get("mcpServers") if isinstance(doc, dict) else None
            return isinstance(servers, dict) and SERVER_NAME in servers
        text = _read(codex_config_path()).text
        span = _find_block(text, TOML_BEGIN, TOML_END, codex_config_path())
        return span is not None and _codex_project(text[span[0] : span[1]]) == str(root)
    except LoreError:
        return False


# ---------------------------------------------------------------- files


@datarecord
class _TextFile:
    """A config file's text as read, with what's needed to write it back the same way."""

    path: Path
    exists: bool
    text: str = ""
    bom: bool = False
    newline: str = "\n"


def _read(path: Path) -> _TextFile:
    """The config file as it is; a FIFO or a device in its place (a committed link to
    ``/dev/zero``) is refused without blocking on it or reading it forever."""
    from lore.safe_read import read_regular

    try:
        raw = read_regular(path, max_bytes=MAX_CONFIG_BYTES)
    except NotFound:
        return _TextFile(path, exists=False)
    except ValidationError as err:
        raise ConfigError(err.reason, path=path) from None
    bom = raw.startswith(b"\xef\xbb\xbf")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(
            "is not valid UTF-8; re-save it as UTF-8, then run the command again", path=path
        ) from None
    return _TextFile(path, True, text, bom, "\r\n" if "\r\n" in text else "\n")


def _write(file: _TextFile, text: str, *, new_mode: int = 0o644) -> None:
    """Replace the file atomically (temp file in the same folder + rename), keeping its mode."""
    _write_bytes(file.path, (("\ufeff" if file.bom else "") + text).encode("utf-8"), new_mode=new_mode)


def _delete(path: Path, root: Path, *, folder_too: bool = True) -> None:
    """Delete a file Lore emptied, and its folder if that is now empty, inside the
    project and (`folder_too`) made by Lore's install."""
    path.unlink()
    folder = path.parent
    if folder_too and folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            pass  # not empty: other files live there


@datarecord
class _Change:
    """One planned edit: new text for a file, its deletion (text None), or just a note (file None)."""

    file: _TextFile | None
    text: str | None
    line: str
    new_mode: int = 0o644
    raw: bytes | None = None  # exact bytes to put back (uninstall restoring an original)


ORIGINALS = ".lore/local/install-originals.json"


class _Original(TypedDict):
    """What ORIGINALS remembers of one file: its bytes before Lore's first change
    (base64; None: Lore created it) and the digest of what Lore last wrote; or
    `merge`: the file changed since, uninstall merges (nothing to restore)."""

    original: NotRequired[str | None]
    written: NotRequired[str | None]
    made_folder: NotRequired[bool]  # its folder did not exist before either (uninstall may remove it)
    merge: NotRequired[bool]


def _apply(changes: list[_Change], root: Path, *, installing: bool) -> list[str]:
    """Write the planned changes; remember originals on install, restore them on uninstall."""
    for change in changes:  # all checked before anything is written
        if change.file is not None:
            _check_inside(change.file.path, root)
            _check_writable(change.file.path)
    originals = _load_originals(root)
    done: list[tuple[Path, bytes | None]] = []  # what was written, and what it held before
    for change in changes:
        if change.file is None:
            continue
        key = str(change.file.path.absolute())
        before = _bytes(change.file.path)
        had_folder = change.file.path.parent.is_dir()
        entry = originals.get(key)
        stale = installing and entry is not None and entry.get("written") != _digest(before)
        if stale or (entry is not None and entry.get("merge")):
            # Changed since Lore wrote it (its part taken out by hand, servers added,
            # the file deleted): the bytes kept from before are history now, and
            # restoring them would undo all that. Uninstall merges instead, and so
            # does every later uninstall until then (a later install's "before"
            # holds Lore's part: never an original).
            originals[key] = {"merge": True}
            entry = None
            stale = True
        if not installing and entry is not None:
            _restore_exactly(change, entry, before, root)
        try:
            if change.text is None and change.raw is None:
                _delete(change.file.path, root, folder_too=entry is None or entry.get("made_folder", True))
            elif change.raw is not None:
                _write_bytes(change.file.path, change.raw)
            else:
                _write(change.file, change.text or "", new_mode=change.new_mode)
        except OSError as err:
            _undo(done)  # all or nothing: the files written before this one get their bytes back
            raise ConfigError(
                f"cannot write ({err.strerror or err}); check the permissions of the file and its folder; "
                "nothing was changed",
                path=change.file.path,
            ) from None
        done.append((change.file.path, before))
        after = _bytes(change.file.path)
        if installing:
            if entry is None and (stale or _holds_secrets(before)):
                continue  # never copied anywhere: uninstall merges instead
            if entry is None:
                entry = {"original": _b64(before), "written": None, "made_folder": not had_folder}
            entry["written"] = _digest(after)
            originals[key] = entry
        else:
            # Lore's part is out of the file: what it held before is no longer worth
            # keeping (restored later, it would undo every edit made since; a merge
            # already gave the user's edits back).
            originals.pop(key, None)
    _save_originals(root, originals)
    return [change.line for change in changes]


def _check_writable(path: Path) -> None:
    """A config its owner made read-only (no write bit for anyone) is not Lore's
    to replace: writing a new file over it would ignore that, even as root."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return  # not there yet: made
    if not mode & 0o222:
        raise ConfigError(
            f"is read-only (mode {mode:04o}); make it writable (chmod u+w) if Lore may change it, "
            "then run the command again; nothing was changed",
            path=path,
        )


def _undo(done: list[tuple[Path, bytes | None]]) -> None:
    """Put back what the files of a failed install or uninstall held (best effort)."""
    for path, before in reversed(done):
        try:
            if before is None:
                path.unlink(missing_ok=True)
            else:
                _write_bytes(path, before)
        except OSError:
            pass


def _check_inside(path: Path, root: Path) -> None:
    """A file of the project that a symbolic link leads out of it (a committed
    ``CLAUDE.md -> ~/.bashrc``) is never written. Files of the agent's own,
    outside the project by design (Codex's config.toml), are not the project's."""
    try:
        path.absolute().relative_to(root.absolute())
    except ValueError:
        return
    real, inside = path.resolve(), root.resolve()
    if real != inside and inside not in real.parents:
        raise ConfigError(
            f"leads out of the project (to {real}), and Lore writes only inside it; "
            "replace the link with a file, or add Lore's part to that file by hand",
            path=_show(path, root),
        )


def _restore_exactly(change: _Change, entry: _Original, current: bytes | None, root: Path) -> None:
    """Make `change` put the original bytes back when the file is as Lore last
    wrote it: nobody edited it since, so the original is exactly what it held
    before Lore's part went in — including a ``lore`` entry the user had
    already, which merging Lore's part out would delete."""
    if entry.get("merge") or entry.get("written") != _digest(current):
        return  # edited since Lore wrote it: merge, don't overwrite
    original = _unb64(entry["original"])
    if original is None:
        return  # Lore created it; the planned change deletes it when it held only Lore's
    if TOML_BEGIN.encode() in original or MD_BEGIN.encode() in original:
        return  # it held a block of Lore's already (another project's, Codex's one config): merge
    assert change.file is not None
    change.text, change.raw = None, original
    change.line = f"restored {_show(change.file.path, root)} as it was before Lore"


# A config's key, or a command-line flag, whose value is a credential whatever it looks like.
_SECRET_NAME = re.compile(
    r"(?i)(api[-_]?key|token|secret|passw(or)?d|credential|auth|private[-_]?key|^--?key$)"
)


def _holds_secrets(data: bytes | None) -> bool:
    """Does a config file hold a credential? (Then its bytes are not remembered.)
    What the secret detector finds, and in JSON a value under a key named like
    one (``"x-api-key": …``) or after such a flag in a server's args (``--key …``)."""
    if not data:
        return False
    from lore import secrets

    text = data.decode("utf-8", "replace")
    if secrets.redact(text)[1]:
        return True
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    return _named_secret(doc)


# A value that names where the secret is, not the secret: "${GITHUB_TOKEN}", "$API_KEY".
_REFERENCE = re.compile(r"^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$")


def _named_secret(value: object) -> bool:
    def given(item: object) -> bool:
        return isinstance(item, str) and bool(item.strip()) and not _REFERENCE.match(item.strip())

    if isinstance(value, dict):
        return any(
            (_SECRET_NAME.search(str(key)) and given(item)) or _named_secret(item)
            for key, item in value.items()
        )
    if isinstance(value, list):
        flags = [
            i for i, item in enumerate(value[:-1]) if isinstance(item, str) and _SECRET_NAME.search(item)
        ]
        return any(given(value[i + 1]) for i in flags) or any(_named_secret(item) for item in value)
    return False


def _bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _digest(data: bytes | None) -> str | None:
    import hashlib

    return None if data is None else hashlib.sha256(data).hexdigest()


def _b64(data: bytes | None) -> str | None:
    import base64

    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    import base64

    return None if text is None else base64.b64decode(text)


def _load_originals(root: Path) -> dict[str, _Original]:
    try:
        data = json.loads((root / ORIGINALS).read_text("utf-8"))
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_originals(root: Path, originals: dict[str, _Original]) -> None:
    path = root / ORIGINALS
    if not (root / ".lore").is_dir():
        return  # not a Lore project (the library used on a plain folder): nothing to keep them in
    if path.is_symlink() or not atomic.contained(root, path.parent):
        # A config's bytes (and a link's target, overwritten) never go outside the project.
        raise ConfigError(
            "is a link, or in a folder that leads out of the project; make .lore/local a folder "
            "of the project and remove the link, then run the command again",
            path=ORIGINALS,
        )
    if not originals:
        if path.exists():
            path.unlink()
        return
    _write_bytes(path, json.dumps(originals, indent=1, sort_keys=True).encode("utf-8"), new_mode=0o600)


def _write_bytes(path: Path, data: bytes, *, new_mode: int = 0o644) -> None:
    """Put `data` at `path` atomically (through a symlink to its target; the file's mode is kept)."""
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = new_mode
    atomic.write_atomic(target, data, mode=mode)


def _show(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


# ---------------------------------------------------------------- JSON configs


def _load_json(file: _TextFile) -> JsonDoc:
    if not file.exists or not file.text.strip():  # an empty file (`touch .mcp.json`) holds nothing yet
        return {}
    try:
        doc = json.loads(file.text, parse_constant=_no_constant, parse_float=_finite, object_pairs_hook=_once)
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"is not valid JSON (line {err.lineno}: {err.msg}); fix it, then run the command again",
            path=file.path,
        ) from None
    except _Unwritable as err:  # rewritten, it would not be the JSON the agent read
        raise ConfigError(f"{err}; fix it, then run the command again", path=file.path) from None
    if not isinstance(doc, dict):
        raise ConfigError(
            "must hold a JSON object ({...}); fix it, then run the command again", path=file.path
        )
    return doc


class _Unwritable(ValueError):
    """A JSON document Lore could read but not write back as the same JSON."""


def _no_constant(name: str) -> float:
    raise _Unwritable(f"holds {name}, which is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _Unwritable(f"holds the number {text[:40]}, too large to write back")
    return value


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Unwritable(
                f"gives the key {json.dumps(key)[:80]} twice (which one counts depends on the reader)"
            )
        out[key] = value
    return out


def _dump_json(doc: JsonDoc, file: _TextFile) -> str:
    """Serialise in the file's own style: indentation, newlines, final newline, and
    ``\\uXXXX`` escapes if the file is pure ASCII (Python's style) or raw UTF-8 if not
    (JavaScript's)."""
    indent, trailing, ascii_only = "  ", True, False
    if file.exists:
        found = re.search(r"^([ \t]+)\S", file.text, re.MULTILINE)
        if found:
            indent = found.group(1)
        trailing = file.text.endswith("\n")
        ascii_only = file.text.isascii()
    text = json.dumps(doc, indent=indent, ensure_ascii=ascii_only) + ("\n" if trailing else "")
    return text.replace("\n", file.newline)


def _json_edit(
    path: Path, root: Path, what: str, edit: Callable[[JsonDoc], JsonDoc], *, removing: bool = False
) -> list[_Change]:
    """Plan `edit` (doc -> doc) on a JSON config file; nothing if the data doesn't change.

    A file left holding an empty object is deleted (all of it was Lore's).
    """
    file = _read(path)
    doc = _load_json(file)
    before = json.dumps(doc)
    try:
        new = edit(json.loads(before))  # edit a deep copy
    except _ShapeProblem as err:
        raise ConfigError(f"{err}; fix it, then run the command again", path=path) from None
    if json.dumps(new) == before:
        return []
    shown = _show(path, root)
    if not new:
        return [_Change(file, None, f"removed {shown} (it held only Lore's {what})")]
    if not file.exists:
        line = f"created {shown}: {what}"
    else:
        line = f"updated {shown}: {'removed' if removing else 'set'} {what}"
    return [_Change(file, _dump_json(new, file), line)]


class _ShapeProblem(Exception):
    """A JSON config has the wrong shape where Lore must edit it."""


def _set_server(doc: JsonDoc, server: dict[str, Any]) -> JsonDoc:
    servers = doc.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise _ShapeProblem("'mcpServers' must be an object")
    entry = servers.get(SERVER_NAME)
    if entry is not None and not _runs_lore(entry):
        # A server of the user's own under Lore's name (a wrapper script...):
        # replacing it would lose it, and so would uninstalling later.
        raise _ShapeProblem(
            f"its MCP server '{SERVER_NAME}' is not Lore's (it runs {_runs(entry)[:120] or 'something else'}); "
            f"rename or remove that entry, or add Lore under '{SERVER_NAME}' by hand"
        )
    # Keep keys the user added to Lore's entry (env, type, ...), and the options
    # they gave lore (`--agent reviewer`); set only ours.
    if isinstance(entry, dict):
        server = {**server, "args": [*server["args"][:-1], *_own_options(entry), "mcp"]}
        servers[SERVER_NAME] = {**entry, **server}
    else:
        servers[SERVER_NAME] = dict(server)
    return doc


def _runs(entry: object) -> str:
    """What an MCP server entry runs, as one line (whatever its shape)."""
    if not isinstance(entry, dict):
        return json.dumps(entry)
    args = entry.get("args")
    parts = [entry.get("command", ""), *(args if isinstance(args, list) else [args] if args else [])]
    return " ".join(str(part) for part in parts).strip()


def _own_options(entry: dict[str, Any]) -> list[str]:
    """The options a user gave lore in its entry, between how lore is run and
    ``mcp`` (``lore --agent reviewer mcp``)."""
    args = list(entry.get("args") or [])[:-1]
    if Path(str(entry.get("command", ""))).name.lower().startswith("python") and args[:2] == ["-m", "lore"]:
        args = args[2:]
    return [str(a) for a in args]


def _runs_lore(entry: object) -> bool:
    """Is this MCP server entry Lore's, as any install wrote it (``lore mcp``,
    ``<python> -m lore mcp``, another checkout's path)?"""
    if not isinstance(entry, dict):
        return False
    command, args = entry.get("command"), entry.get("args") or []
    if not isinstance(command, str) or not isinstance(args, list) or not args or args[-1] != "mcp":
        return False
    name = Path(command).name.lower()
    return name.startswith("lore") or (name.startswith("python") and args[:2] == ["-m", "lore"])


def _drop_server(doc: JsonDoc) -> JsonDoc:
    servers = doc.get("mcpServers")
    if isinstance(servers, dict) and _runs_lore(servers.get(SERVER_NAME)):  # never a server of the user's own
        del servers[SERVER_NAME]
        if not servers:
            del doc["mcpServers"]
    return doc


def _hook_kind(hook: object, sub: str) -> str | None:
    """Whose hook for `sub` this is: "lore" (as Lore writes it: `lore hook
    stop`, a path to a `lore`, or `python -m lore hook stop`, of this install
    or an earlier one), "own" (the user's own way to run Lore's hook: an
    environment prefix, options: left as written), or None (not Lore's:
    `npx @acme/lore-notify hook stop` merely looks like it)."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return None
    try:
        words = shlex.split(hook["command"])
    except ValueError:
        return None
    if words[-2:] != ["hook", sub]:
        return None
    runner = words[:-2]
    if len(runner) == 1 and _is_lore(runner[0]):
        return "lore"
    if len(runner) == 3 and runner[1:] == ["-m", "lore"] and os.path.basename(runner[0]).startswith("python"):
        return "lore"
    if any(_is_lore(word) for word in runner) or runner[-2:] == ["-m", "lore"]:
        return "own"
    return None


def _is_lore(word: str) -> bool:
    return os.path.basename(word) in ("lore", "lore.exe")


def _set_hooks(doc: JsonDoc, command: list[str]) -> JsonDoc:
    hooks = doc.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise _ShapeProblem("'hooks' must be an object")
    for event, sub in HOOK_EVENTS.items():
        groups = hooks.get(event, [])
        if not isinstance(groups, list):
            raise _ShapeProblem(f"'hooks.{event}' must be a list")
        hooks[event] = _place_hook(groups, sub, hook_command(command, event), event in _MATCHER_EVENTS)
    return doc


def _place_hook(groups: list[Any], sub: str, command: str, with_matcher: bool) -> list[Any]:
    """Groups with Lore's hook set to `command`: updated where it is, else appended."""
    out: list[Any] = []
    hooks = [
        hook
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for hook in group["hooks"]
    ]
    # The user runs Lore's hook their own way (a prefix, options): that one stands for Lore's.
    placed = any(_hook_kind(hook, sub) == "own" for hook in hooks)
    for group in groups:
        if not (isinstance(group, dict) and isinstance(group.get("hooks"), list)) or not group["hooks"]:
            out.append(group)
            continue
        kept = []
        for hook in group["hooks"]:
            kind = _hook_kind(hook, sub)
            if kind != "lore":
                kept.append(hook)
            elif not placed:  # update in place, keeping keys the user added (timeout, ...)
                kept.append({**hook, "type": "command", "command": command})
                placed = True
            # later duplicates of Lore's hook are dropped
        if kept:
            out.append({**group, "hooks": kept})
    if not placed:
        group = {"matcher": ""} if with_matcher else {}
        group["hooks"] = [{"type": "command", "command": command}]
        out.append(group)
    return out


def _drop_hooks(doc: JsonDoc) -> JsonDoc:
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return doc
    for event, sub in HOOK_EVENTS.items():
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        out = []
        removed = False
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                kept = [h for h in group["hooks"] if _hook_kind(h, sub) != "lore"]
                if len(kept) != len(group["hooks"]):
                    removed = True
                    if kept:
                        out.append({**group, "hooks": kept})
                    continue
            out.append(group)
        if removed:
            if out:
                hooks[event] = out
            else:
                del hooks[event]
            if not hooks:
                del doc["hooks"]
                break
    return doc


# ---------------------------------------------------------------- delimited text blocks


def _find_block(text: str, begin: str, end: str, path: Path) -> tuple[int, int] | None:
    """Character span of Lore's block (begin line .. end line and its newline), or None.

    A begin line is `begin` itself or `begin` followed by a space and a comment.
    """
    start = None
    offset = 0
    for line in text.splitlines(keepends=True):
        bare = line.strip()
        if start is None and (bare == begin or bare.startswith(begin + " ")):
            start = offset
        elif bare == end:
            if start is None:
                raise ConfigError(
                    f"has a '{end}' line without '{begin}' before it; remove the "
                    "stray line, then run the command again",
                    path=path,
                )
            return start, offset + len(line)
        offset += len(line)
    if start is not None:
        raise ConfigError(
            f"has a '{begin}' line but no '{end}' after it; delete the partial "
            "Lore block, then run the command again",
            path=path,
        )
    return None


def _put_block(text: str, block: str, span: tuple[int, int] | None, newline: str = "\n") -> str:
    if span is not None:
        return text[: span[0]] + block + text[span[1] :]
    if not text:
        return block
    sep = newline if text.endswith("\n") else newline * 2  # in the file's own line ends
    return text + sep + block


def _cut_block(text: str, span: tuple[int, int]) -> str:
    before, after = text[: span[0]], text[span[1] :]
    if before.endswith("\n\n"):  # the blank line _put_block added
        before = before[:-1]
    elif before.endswith("\r\n\r\n"):
        before = before[:-2]
    return before + after


def _has_block(path: Path, begin: str) -> bool:
    file = _read(path)
    return file.exists and any(line.strip() == begin for line in file.text.splitlines())


def _later_blocks_cut(text: str, span: tuple[int, int], path: Path) -> str:
    """`text` without the Lore blocks after the one at `span` (a block pasted or
    merged in twice: agents read both, and uninstall would leave one behind)."""
    head, tail = text[: span[1]], text[span[1] :]
    while (extra := _find_block(tail, MD_BEGIN, MD_END, path)) is not None:
        tail = _cut_block(tail, extra)
    return head + tail


def _md_install(path: Path, root: Path) -> list[_Change]:
    file = _read(path)
    block = (f"{MD_BEGIN}\n{INSTRUCTIONS.rstrip()}\n{MD_END}\n").replace("\n", file.newline)
    span = _find_block(file.text, MD_BEGIN, MD_END, path)
    text = _later_blocks_cut(file.text, span, path) if span else file.text
    new = _put_block(text, block, span, file.newline)
    if file.exists and new == file.text:
        return []
    shown = _show(path, root)
    if not file.exists:
        return [_Change(file, new, f"created {shown}: Lore instructions")]
    return [_Change(file, new, f"updated {shown}: {'refreshed' if span else 'added'} Lore instructions")]


def _md_uninstall(path: Path, root: Path) -> list[_Change]:
    file = _read(path)
    if not file.exists:
        return []
    span = _find_block(file.text, MD_BEGIN, MD_END, path)
    if span is None:
        return []
    new = _cut_block(_later_blocks_cut(file.text, span, path), span)
    shown = _show(path, root)
    if not new:
        return [_Change(file, None, f"removed {shown} (it held only Lore's instructions)")]
    return [_Change(file, new, f"updated {shown}: removed Lore instructions")]


# ---------------------------------------------------------------- Codex (TOML)


def _toml_str(value: str) -> str:
    """A TOML basic string."""
    out = ['"']
    for ch in value:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\b\t\n\f\r":
            out.append({"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _codex_block(root: Path, command: list[str]) -> str:
    args = ", ".join(_toml_str(arg) for arg in [*command[1:], "mcp"])
    return (
        f"{TOML_BEGIN} {TOML_NOTE}\n"
        f"[mcp_servers.{SERVER_NAME}]\n"
        f"command = {_toml_str(command[0])}\n"
        f"args = [{args}]\n"
        f"cwd = {_toml_str(str(root))}\n"
        f"\n"
        f"[mcp_servers.{SERVER_NAME}.env]\n"
        f"LORE_PROJECT = {_toml_str(str(root))}\n"
        f"{TOML_END}\n"
    )


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(
            f"is not valid TOML ({err}); fix it, then run the command again", path=path
        ) from None


def _codex_project(block_text: str) -> str | None:
    try:
        server = tomllib.loads(block_text).get("mcp_servers", {}).get(SERVER_NAME, {})
    except tomllib.TOMLDecodeError:
        return None
    env = server.get("env") if isinstance(server, dict) else None
    project = env.get("LORE_PROJECT") if isinstance(env, dict) else None
    return project if isinstance(project, str) else None


def _codex_install(root: Path, command: list[str]) -> list[_Change]:
    path = codex_config_path()
    file = _read(path)
    data = _parse_toml(file.text, path)
    span = _find_block(file.text, TOML_BEGIN, TOML_END, path)
    if span is None and SERVER_NAME in (data.get("mcp_servers") or {}):
        raise ConfigError(
            f"already defines [mcp_servers.{SERVER_NAME}], not written by Lore; "
            "remove or rename it, then run `lore install codex` again",
            path=path,
        )
    previous = _codex_project(file.text[span[0] : span[1]]) if span else None
    block = _codex_block(root, command).replace("\n", file.newline)
    new = _put_block(file.text, block, span, file.newline)
    if file.exists and new == file.text:
        return []
    try:
        written = tomllib.loads(new)["mcp_servers"][SERVER_NAME]
        assert written["env"]["LORE_PROJECT"] == str(root)
    except (tomllib.TOMLDecodeError, KeyError, TypeError, AssertionError):
        raise ConfigError(
            f"Lore's [mcp_servers.{SERVER_NAME}] table cannot be added to this file "
            "(is `mcp_servers` an inline table?); use [mcp_servers.<name>] tables, "
            "then run `lore install codex` again",
            path=path,
        ) from None
    if not file.exists:
        line = f"created {path}: MCP server '{SERVER_NAME}' for {root}"
    elif previous and previous != str(root):
        line = (
            f"updated {path}: MCP server '{SERVER_NAME}' now serves {root} (was {previous}); "
            "Codex's config is per user, so one project at a time"
        )
    else:
        line = f"updated {path}: set MCP server '{SERVER_NAME}' for {root}"
    return [_Change(file, new, line, new_mode=0o600)]


def _codex_uninstall(root: Path) -> list[_Change]:
    path = codex_config_path()
    file = _read(path)
    if not file.exists:
        return []
    span = _find_block(file.text, TOML_BEGIN, TOML_END, path)
    if span is None:
        return []
    project = _codex_project(file.text[span[0] : span[1]])
    if project is not None and project != str(root):
        return [
            _Change(
                None, None, f"left {path} alone: its MCP server '{SERVER_NAME}' serves {project}, not {root}"
            )
        ]
    new = _cut_block(file.text, span)
    if not new:
        return [_Change(file, None, f"removed {path} (it held only Lore's MCP server)")]
    return [_Change(file, new, f"updated {path}: removed MCP server '{SERVER_NAME}'")]
