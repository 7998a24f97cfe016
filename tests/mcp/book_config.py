"""Connects the MCP Python SDK to toolhost exactly as the book's stdio `mcpServers` entry says.

The entry is read from the book's MCP chapter, docs/mcp.md (the first ```json block with "mcpServers"); only its
example paths are replaced (--replace OLD=NEW) and `toolhost` is found on PATH, as a client
would find it. Lists the tools and calls calc.eval; exits non-zero with a message otherwise.
"""

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters


def page_entry(page: Path) -> dict:
    for block in re.findall(r"```json\n(.*?)```", page.read_text(), re.S):
        doc = json.loads(block)
        servers = doc.get("mcpServers", {})
        for entry in servers.values():
            if "command" in entry:
                return entry
    sys.exit(f"{page} has no ```json block with an mcpServers stdio entry")


async def main(a: argparse.Namespace) -> int:
    entry = page_entry(Path(a.page))
    args = list(entry["args"])
    for pair in a.replace:
        old, new = pair.split("=", 1)
        if old not in args:
            sys.exit(f"the book's entry has no argument {old!r}: {args}")
        args = [new if x == old else x for x in args]
    params = StdioServerParameters(command=entry["command"], args=args)
    async with Client(params, mode="legacy") as c:
        names = [t.name for t in (await c.list_tools()).tools]
        if "calc.eval" not in names:
            sys.exit(f"calc.eval is not among the tools: {names}")
        r = await c.call_tool("calc.eval", {"expression": "6*7"})
        if r.is_error or r.structured_content != {"result": 42}:
            sys.exit(f"calc.eval 6*7 gave {r}")
    print(json.dumps({"tools": len(names), "calc.eval": 42}))
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--page", required=True)
    p.add_argument("--replace", action="append", default=[], metavar="OLD=NEW")
    sys.exit(asyncio.run(main(p.parse_args())))
