"""Session summaries in search: compacted sessions are found by `lore search` and
`lore session search`, by their agent only; recall takes them only when asked."""

from __future__ import annotations

import lore
from lore.sessions import message


def record_session(root, session_id: str, agent: str | None) -> str:
    """A session with a distinctive decision, compacted; returns the summary's path."""
    config = root / ".lore/config.toml"
    if "[sessions]" not in config.read_text():
        config.write_text(
            config.read_text()
            + "\n[sessions]\nsoft_limit_tokens = 2000\nhard_limit_tokens = 4000\nprotected_recent_tokens = 100\n"
        )
    with lore.open(root, agent=agent) as p:
        p.sessions.start(session_id, agent=agent)
        events = [message("user", "Which queue should the billing worker use for invoices?")]
        events += [message("assistant", f"Looking at the worker setup, step {n}.") for n in range(30)]
        events.append(
            message("assistant", "We decided to use RabbitMQ quorum queues for the billing worker.")
        )
        events += [message("user", f"Fine, continue with step {n}.") for n in range(30)]
        p.sessions.append_many(session_id, events)
        result = p.sessions.compact(session_id)
        assert result.compacted
        return result.summary_path


def test_summaries_are_found_by_search_and_session_search_for_their_agent_only(proj, cli_in):
    root = proj.project.root
    path = record_session(root, "s1", "alice")
    assert path.startswith(".lore/sessions/s1/summaries/")

    hits = cli_in(root, "search", "RabbitMQ quorum queues billing", "--agent", "alice", "--json")
    assert hits and hits[0]["path"] == path
    found = cli_in(root, "session", "search", "RabbitMQ", "--agent", "alice", "--json")
    assert [h["path"] for h in found] == [path]
    assert cli_in(root, "session", "search", "RabbitMQ", "--agent", "alice", "--session", "s1", "--json")
    # A session that does not exist is said, not answered with no matches.
    missing = cli_in(root, "session", "search", "RabbitMQ", "--agent", "alice", "--session", "s2", ok=False)
    assert missing.returncode == 1 and "no session s2" in missing.stderr
    text = cli_in(root, "session", "search", "RabbitMQ", "--agent", "alice", raw=True).stdout
    assert "Session s1 events" in text

    # Another agent, or none, does not see alice's session.
    for who in (("--agent", "bob"), ()):
        assert cli_in(root, "search", "RabbitMQ quorum queues", *who, "--json") == [], who
        assert cli_in(root, "session", "search", "RabbitMQ", *who, "--json") == [], who
    listed = cli_in(root, "list", "--tier", "session-summary", "--agent", "alice", "--json")
    assert [r["path"] for r in listed] == [path] and listed[0]["storage"] == "session-summary"


def test_recall_includes_session_summaries_only_when_asked(proj, cli_in):
    root = proj.project.root
    path = record_session(root, "s1", None)  # no agent: everyone's
    args = ("recall", "billing worker RabbitMQ quorum queues", "--no-code", "--no-related-work", "--json")
    assert [m["path"] for m in cli_in(root, *args)["memories"]] == []
    assert path in [m["path"] for m in cli_in(root, *args, "--include-sessions")["memories"]]
    assert cli_in(root, "search", "RabbitMQ quorum", "--json")[0]["path"] == path
