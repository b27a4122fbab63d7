"""Many agents adding memories at the same moment: all succeed, nothing torn or lost."""

from __future__ import annotations

import subprocess
import sys

from lore.memory import markdown

N = 10


def test_concurrent_adds_from_many_processes(cli):
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lore",
                "add",
                "--title",
                "Same title for everyone",
                "--body",
                f"Agent {i} has something distinct to say, number {i}.",
                "--tag",
                "race",
            ],
            cwd=cli.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for i in range(N)
    ]
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    assert all(code == 0 for _, _, code in results), results
    files = sorted((cli.cwd / ".lore/memory").glob("*.md"))
    assert len(files) == N
    bodies = set()
    for path in files:
        memory, _ = markdown.parse(path.read_bytes(), path.name)  # every file whole and valid
        bodies.add(memory.body.strip())
    assert bodies == {f"Agent {i} has something distinct to say, number {i}." for i in range(N)}
    assert len(cli.json("search", "distinct", "--limit", "50")) == N
    assert not list((cli.cwd / ".lore/memory").glob(".*.tmp"))


def test_concurrent_identical_adds_write_one_file(cli):
    args = [
        sys.executable,
        "-m",
        "lore",
        "add",
        "--title",
        "Dup",
        "--body",
        "The very same memory body.",
        "--occurred-at",
        "2025-05-05T05:05:05Z",
        "--json",
    ]
    procs = [
        subprocess.Popen(
            args, cwd=cli.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        for _ in range(N)
    ]
    for p in procs:
        p.communicate(timeout=120)
        assert p.returncode == 0
    assert len(list((cli.cwd / ".lore/memory").glob("*.md"))) == 1
