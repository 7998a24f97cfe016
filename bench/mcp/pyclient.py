"""Round trips of one `tools/call` over stdio with the official MCP Python SDK (`mcp.Client`).

The bench's `mcp` group (bench/src/mcp/python.rs) runs this against `toolhost mcp` and
against a bare JSON-RPC server that replays toolhost's own replies without doing anything
(the client-and-pipe floor); the difference is what toolhost's side of a call costs a
Python user. After `--warm-up` calls, `--calls` calls one after another, each timed from
the client's `call_tool` to its result (the SDK parses the reply and validates its
`structuredContent` against the tool's output schema, as every Python user's call does).
Prints one JSON line: {"p50_us", "p99_us", "calls"}. The server's command line follows
`--`; its environment is this one's plus each `--env NAME=VALUE`.

By hand:
    target/guest-langs/mcp-venv/bin/python bench/mcp/pyclient.py --tool calc.eval \
        --arguments '{"expression": "6*7"}' --expect '{"result": 42}' -- toolhost mcp calc.wasm
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import anyio
from mcp import Client, StdioServerParameters


async def measure(a: argparse.Namespace) -> dict[str, float]:
    env = dict(os.environ)
    for pair in a.env:
        name, _, value = pair.partition("=")
        env[name] = value
    server = StdioServerParameters(command=a.command[0], args=a.command[1:], env=env)
    arguments = json.loads(a.arguments)
    expect = json.loads(a.expect)
    took: list[int] = []
    async with Client(server, mode="legacy", read_timeout_seconds=60) as client:
        for i in range(a.warm_up + a.calls):
            start = time.perf_counter_ns()
            result = await client.call_tool(a.tool, arguments)
            end = time.perf_counter_ns()
            if result.is_error or result.structured_content != expect:
                raise SystemExit(f"call {i}: expected {expect!r}, got {result!r}")
            if i >= a.warm_up:
                took.append(end - start)
    took.sort()
    at = lambda q: took[min(len(took) * q // 100, len(took) - 1)] / 1000  # noqa: E731
    return {"p50_us": at(50), "p99_us": at(99), "calls": len(took)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tool", required=True)
    p.add_argument("--arguments", required=True, help="the call's arguments (JSON)")
    p.add_argument("--expect", required=True, help="the structuredContent every call must give")
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--warm-up", type=int, default=100)
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("command", nargs="+", help="the server's command line (after --)")
    a = p.parse_args()
    print(json.dumps(anyio.run(measure, a)))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
