"""Issue 6 benchmark: the MCP tool list's token cost, and tool latency over stdio.

    python bench/mcp_server.py [--project bench/.data/stdlib]
    python bench/mcp_server.py --tools-only     # the tool list's cost alone, on a fresh temp project

Starts `lore mcp` as a real subprocess with the SDK's stdio client, measures
the tokens of the tool list as an agent receives it (names, descriptions,
input schemas; cl100k if `bpe-openai` is installed, else Lore's estimate) and
p50/p95 of search_memories and recall_context calls on the given project,
after `--think` seconds of an idle server (an agent's first turn; the server
reads its frequent terms' keyword lists while idle; 0: the calls come at once).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path

from _common import BENCH_DATA, WORK, jsonl, percentile, row

# bench/secrets.py would shadow the standard library's `secrets` (starlette needs it).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def tokens(text: str) -> tuple[int, str]:
    try:
        import bpe_openai

        return len(bpe_openai.get_encoding("cl100k_base").encode(text)), "cl100k"
    except ImportError:
        from lore.index.tokens import count_tokens

        return count_tokens(text), "estimate"


async def run(project: str, tools_only: bool = False, think: float = 0.0) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-P", "-m", "lore", "mcp"], cwd=project)
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        row("server start + initialize", f"{(time.perf_counter() - start) * 1000:.0f} ms")
        # Each tool whole, as the server sends it (an output schema too, if any).
        sent = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
        payload = json.dumps(sent)
        count, how = tokens(payload)
        row(f"tool list ({len(listed.tools)} tools)", f"{count} tokens ({how}, JSON as sent)")
        for tool, whole in zip(listed.tools, sent, strict=True):
            one, _ = tokens(json.dumps(whole))
            row(f"  {tool.name}", f"{one} tokens")
        if tools_only:
            return
        # An agent's first turn: the server is idle, and reads its keyword lists meanwhile.
        await asyncio.sleep(think)
        row("pause before the calls (an agent's first turn)", f"{think:.0f} s")
        random.seed(3)
        tasks = [q["subject"] for q in jsonl(BENCH_DATA / "gitlog-flask/queries.jsonl")]
        questions = [q["text"] for q in jsonl(BENCH_DATA / "locomo/queries.jsonl")]
        for name, make, n in (
            ("search_memories", lambda: {"query": random.choice(questions)}, 100),
            ("memory_search", lambda: {"query": random.choice(questions)}, 50),
            ("recall_context", lambda: {"title": random.choice(tasks)}, 50),
        ):
            await session.call_tool(name, make())  # warm
            times = []
            for _ in range(n):
                start = time.perf_counter()
                result = await session.call_tool(name, make())
                times.append((time.perf_counter() - start) * 1000)
                assert not result.is_error, result.content[0].text
            row(
                f"{name} over stdio",
                f"p50 {percentile(times, 50):.1f} ms   p95 {percentile(times, 95):.1f} ms",
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", default=str(WORK / "stdlib"))
    parser.add_argument("--tools-only", action="store_true", help="Only the tool list, on a temp project.")
    parser.add_argument(
        "--think",
        type=float,
        default=5.0,
        help="Seconds between start and the first call (an agent's first turn); 0: calls right away.",
    )
    args = parser.parse_args()
    import lore

    if args.tools_only:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            lore.init(tmp).close()
            (Path(tmp) / ".lore/config.toml").write_text('[embedding]\nprovider = "none"\n')
            asyncio.run(run(tmp, tools_only=True))
        return
    with lore.open(args.project) as project:
        counts = project.store.counts()
    print(f"MCP benchmark on {args.project}: {counts.chunks:,} chunks")
    asyncio.run(run(args.project, think=args.think))


if __name__ == "__main__":
    main()
