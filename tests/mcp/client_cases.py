"""`toolhost mcp` driven by the official MCP Python SDK (`mcp`, pinned in requirements.txt).

One run covers one transport (stdio, or streamable HTTP against a server this script starts
and stops) and one connection mode of `mcp.Client` (`legacy`: the initialize handshake, the
SDK offering its newest handshake revision, 2025-11-25; `2026-07-28`: the stateless
revision, adopted without a handshake; `auto`: probe `server/discover`, fall back to
initialize). It stops at the first failing case with a message naming it and exits 1; on
success it prints one JSON line: {"transport", "mode", "protocol_version", "passed": [...]}.

The policy must be the fixture of tests/all/mcp/mod.rs: calc (idempotent, no grants),
misbehave (a read-only grant at /data, fuel and timeout limits), fs (a read-write grant),
http (one origin). The limits the cases check are read from it.

Run by the Rust test tests/all/mcp/python.rs; by hand:
    target/guest-langs/mcp-venv/bin/python tests/mcp/client_cases.py --bin target/release/toolhost \
        --cache-dir /tmp/c --state-dir /tmp/s --policy POLICY \
        --tools target/fixtures/calc.wasm,target/fixtures/misbehave.wasm,target/fixtures/fs.wasm,target/fixtures/http.wasm \
        --transport stdio --mode legacy
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import Client, MCPError, StdioServerParameters
from mcp_types import INVALID_PARAMS
from mcp_types.version import is_version_at_least

MODES = ("legacy", "auto", "2026-07-28")


class CaseFailed(Exception):
    pass


def check(cond: bool, what: str, *detail: Any) -> None:
    if not cond:
        raise CaseFailed(what + "".join(f"\n  {d!r}" for d in detail))


@dataclass
class Run:
    args: argparse.Namespace
    fuel: int
    timeout_ms: int
    calc_idempotent: bool
    client: Client | None = None
    passed: list[str] = field(default_factory=list)

    @property
    def c(self) -> Client:
        assert self.client is not None
        return self.client


def server_args(a: argparse.Namespace) -> list[str]:
    return [
        "--cache-dir",
        a.cache_dir,
        "--state-dir",
        a.state_dir,
        "mcp",
        "--policy",
        a.policy,
        *a.tools.split(","),
    ]


def error_of(result: Any) -> dict[str, Any]:
    """The `{"kind", "message", …}` of an `isError` result."""
    check(result.is_error is True, "expected an isError result", result)
    sc = result.structured_content
    check(isinstance(sc, dict) and isinstance(sc.get("error"), dict), "no structured error", result)
    return sc["error"]


async def call(run: Run, name: str, args: dict[str, Any], **kw: Any) -> Any:
    return await run.c.call_tool(name, args, **kw)


# --- cases ---------------------------------------------------------------------------------


async def list_tools(run: Run) -> None:
    tools = (await run.c.list_tools()).tools
    by_name = {t.name: t for t in tools}
    for want in ["calc.eval", "misbehave.spin", "misbehave.sleep", "misbehave.write-file", "fs.write-file", "http.get-text"]:
        check(want in by_name, f"{want} is not listed", sorted(by_name))
    for t in tools:
        check(t.name.split(".")[0] in ("calc", "misbehave", "fs", "http"), f"{t.name}: not from a policy section")
        check(t.input_schema.get("type") == "object", f"{t.name}: input schema is not an object", t.input_schema)
        check(
            isinstance(t.output_schema, dict) and t.output_schema.get("type") == "object",
            f"{t.name}: output schema is missing or not an object",
            t.output_schema,
        )
        check(bool(t.description), f"{t.name}: no description")
    calc = by_name["calc.eval"]
    check("expression" in calc.input_schema.get("properties", {}), "calc.eval takes an expression", calc.input_schema)
    check(calc.output_schema.get("required") == ["result"], "calc.eval's output is wrapped", calc.output_schema)

    def hints(name: str) -> list[bool | None]:
        a = by_name[name].annotations
        check(a is not None, f"{name}: no annotations")
        return [a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint]

    # [readOnly, destructive, idempotent, openWorld], from the grants (idempotent is the
    # operator's word in the policy: true for calc in the fixture).
    want = {
        "calc.eval": [True, False, run.calc_idempotent, False],
        "misbehave.spin": [True, False, False, False],
        "fs.write-file": [False, True, False, False],
        "http.get-text": [False, False, False, True],
    }
    for name, w in want.items():
        check(hints(name) == w, f"{name}: annotations [readOnly, destructive, idempotent, openWorld]", hints(name), w)


async def calc_ok(run: Run) -> None:
    # Spy on the SDK's own output-schema check: it must run, on the listed schema, for this
    # result (the SDK validates structuredContent of every non-error result).
    session = run.c.session
    seen: list[tuple[str, dict[str, Any]]] = []
    original = session._output_schema_validator

    def spy(name: str, schema: dict[str, Any]) -> Any:
        seen.append((name, schema))
        return original(name, schema)

    session._output_schema_validator = spy  # type: ignore[method-assign]
    try:
        r = await call(run, "calc.eval", {"expression": "6*7"})
    finally:
        del session._output_schema_validator
    check(r.is_error is not True, "calc.eval 6*7 failed", r)
    check(r.structured_content == {"result": 42.0}, "structuredContent", r.structured_content)
    texts = [c.text for c in r.content if getattr(c, "type", None) == "text"]
    check(len(texts) >= 1, "no text form of the result", r.content)
    check(json.loads(texts[0]) == {"result": 42.0}, "the text form is the structured content as JSON", texts)
    check(
        [n for n, _ in seen] == ["calc.eval"] and seen[0][1].get("required") == ["result"],
        "the SDK did not validate structuredContent against calc.eval's outputSchema",
        seen,
    )

    # And the check has teeth: against a schema the result does not match, the SDK rejects it.
    schemas = session._tool_output_schemas
    real = schemas["calc.eval"]
    schemas["calc.eval"] = {**real, "properties": {"result": {"type": "string"}}}
    session._tool_output_validators.pop("calc.eval", None)
    try:
        try:
            await call(run, "calc.eval", {"expression": "6*7"})
        except RuntimeError as e:
            check("Invalid structured content" in str(e), "unexpected validation error", str(e))
        else:
            raise CaseFailed("the SDK accepted a result that does not match the output schema")
    finally:
        schemas["calc.eval"] = real
        session._tool_output_validators.pop("calc.eval", None)


async def tool_error(run: Run) -> None:
    e = error_of(await call(run, "calc.eval", {"expression": "1/0"}))
    check(e.get("kind") == "tool_error", "calc.eval 1/0 kind", e)
    check(bool(e.get("message")), "a tool error has a message", e)


async def denied(run: Run) -> None:
    data = os.path.join(os.path.dirname(os.path.abspath(run.args.policy)), "data")
    target = os.path.join(data, "from-python.txt")
    e = error_of(await call(run, "misbehave.write-file", {"path": "/data/from-python.txt", "content": "x"}))
    check(e.get("kind") == "denied", "a write into the read-only grant", e)
    check(not os.path.exists(target), "the denied write reached the host", target)


async def fuel(run: Run) -> None:
    # The fuel runs out in milliseconds of guest time, the deadline is seconds away: only
    # fuel metering ends the spin this way.
    e = error_of(await call(run, "misbehave.spin", {}))
    check(e.get("kind") == "fuel_exhausted", "misbehave.spin kind", e)
    msg = str(e.get("message", ""))
    check(str(run.fuel) in msg, f"the message names the limit ({run.fuel} fuel)", e)
    check(e.get("limit") == "fuel", "the limit's name", e)


async def deadline(run: Run) -> None:
    started = time.monotonic()
    e = error_of(await call(run, "misbehave.sleep", {"ms": 60_000}))
    took = time.monotonic() - started
    check(e.get("kind") == "timeout" and e.get("limit") == "timeout", "misbehave.sleep 60000", e)
    check(took < run.timeout_ms / 1000 + 1, f"the deadline ended the call after {took:.2f}s", e)


def journal_text(run: Run) -> str:
    return "".join(open(p).read() for p in sorted(glob.glob(os.path.join(run.args.state_dir, "runs", "*.jsonl"))))


async def cancelled(run: Run) -> None:
    before = journal_text(run).count("cancelled")
    started = time.monotonic()
    try:
        await call(run, "misbehave.sleep", {"ms": 60_000}, read_timeout_seconds=0.3)
    except MCPError as e:
        check("timed out" in e.message, "the abandoned call ended otherwise", e.error)
    else:
        raise CaseFailed("misbehave.sleep 60000 answered within 0.3 s")
    r = await call(run, "calc.eval", {"expression": "1+1"})
    check(r.structured_content == {"result": 2.0}, "the call after the cancelled one", r)
    check(time.monotonic() - started < run.timeout_ms / 1000, "the next call waited for the abandoned one")
    # The server heard the cancellation and ended the sandboxed call (its journal says so)
    # well before the deadline would have.
    while journal_text(run).count("cancelled") <= before:
        check(
            time.monotonic() - started < run.timeout_ms / 1000,
            "no cancelled call in the server's journal before the deadline",
            journal_text(run)[-2000:],
        )
        await anyio.sleep(0.05)


async def progress(run: Run) -> None:
    ticks: list[tuple[float, float | None, str | None]] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        ticks.append((p, total, message))

    r = await call(run, "misbehave.sleep", {"ms": 900}, progress_callback=on_progress)
    check(r.is_error is not True, "misbehave.sleep 900 failed", r)
    check(len(ticks) >= 2, "at least two progress notifications in 0.9 s", ticks)
    check(all(a[0] < b[0] for a, b in zip(ticks, ticks[1:])), "progress increases", ticks)
    check(all(t[1] == run.timeout_ms for t in ticks), f"total is the deadline, {run.timeout_ms} ms", ticks)


async def concurrent(run: Run) -> None:
    got: dict[int, Any] = {}

    async def one(i: int) -> None:
        r = await call(run, "calc.eval", {"expression": f"{i}*{i}"})
        got[i] = r.structured_content

    async with anyio.create_task_group() as tg:
        for i in range(32):
            tg.start_soon(one, i)
    wrong = {i: v for i, v in got.items() if v != {"result": float(i * i)}}
    check(len(got) == 32 and not wrong, "32 concurrent calc.eval calls", wrong)


async def unknown_tool(run: Run) -> None:
    try:
        r = await call(run, "calc.nope", {})
    except MCPError as e:
        check(e.code == INVALID_PARAMS, "unknown tool error code", e.error)
        check("unknown tool `calc.nope`" in e.message, "unknown tool message", e.error)
    else:
        raise CaseFailed(f"calc.nope answered with a result instead of a JSON-RPC error: {r!r}")


async def bad_arguments(run: Run) -> None:
    version = run.c.protocol_version
    check(is_version_at_least(version, "2025-11-25"), f"argument errors as results need 2025-11-25+, negotiated {version}")
    e = error_of(await call(run, "calc.eval", {"expression": 5}))
    check(e.get("kind") == "bad_arguments", "calc.eval {expression: 5}", e)


def bad_arguments_2025_06_18(run: Run) -> None:
    """By hand, on stdio: below 2025-11-25 argument errors are JSON-RPC errors (-32602)."""
    proc = subprocess.Popen(
        [run.args.bin, *server_args(run.args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin and proc.stdout

    def send(msg: dict[str, Any]) -> None:
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()

    def response(id_: int) -> dict[str, Any]:
        for line in proc.stdout:
            msg = json.loads(line)
            if msg.get("id") == id_:
                return msg
        raise CaseFailed(f"the server closed stdout before answering request {id_}")

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "client_cases.py", "version": "0"}}})
        init = response(1)
        check(init.get("result", {}).get("protocolVersion") == "2025-06-18", "initialize at 2025-06-18", init)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "calc.eval", "arguments": {"expression": 5}}})
        r = response(2)
        check("error" in r and r["error"].get("code") == -32602, "tools/call with bad arguments at 2025-06-18", r)
    finally:
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


CASES: list[tuple[str, Callable[[Run], Awaitable[None]]]] = [
    ("list_tools", list_tools),
    ("calc_ok", calc_ok),
    ("tool_error", tool_error),
    ("denied", denied),
    ("fuel", fuel),
    ("deadline", deadline),
    ("cancelled", cancelled),
    ("progress", progress),
    ("concurrent", concurrent),
    ("unknown_tool", unknown_tool),
    ("bad_arguments", bad_arguments),
]


# --- servers ---------------------------------------------------------------------------------


class HttpServer:
    """`toolhost mcp --http 127.0.0.1:0`, its URL read from the line it prints on stderr."""

    def __init__(self, argv: list[str]) -> None:
        """`argv`: the server's command line up to `--http`, which this adds."""
        self.proc = subprocess.Popen(
            [*argv, "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr
        self.log: list[str] = []
        deadline = time.monotonic() + 60
        self.url = ""
        for line in self.proc.stderr:
            self.log.append(line)
            if m := re.search(r"(http://\S+)", line):
                self.url = m.group(1)
                break
            if time.monotonic() > deadline:
                break
        if not self.url:
            self.stop()
            raise CaseFailed("no `serving … at http://…` line from the server:\n" + "".join(self.log))
        threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True).start()  # type: ignore[arg-type]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def case_failure(e: BaseException) -> CaseFailed | None:
    if isinstance(e, CaseFailed):
        return e
    if isinstance(e, BaseExceptionGroup):
        for inner in e.exceptions:
            if (found := case_failure(inner)) is not None:
                return found
    return None


def failed(e: BaseException, where: str) -> int:
    """1, after naming the case `where` that failed; an SDK error or a broken connection is
    raised again, named, with its traceback."""
    # A case's failure inside the client's task group arrives wrapped in a group.
    if (found := case_failure(e)) is not None:
        print(f"FAIL {where}: {found}", file=sys.stderr)
        return 1
    print(f"FAIL {where}: {type(e).__name__}: {e}", file=sys.stderr)
    raise e


async def main(a: argparse.Namespace) -> int:
    policy = tomllib.load(open(a.policy, "rb"))
    limits = policy["tools"]["misbehave"]["limits"]
    run = Run(
        args=a,
        fuel=int(limits["fuel"]),
        timeout_ms=int(limits["timeout_ms"]),
        calc_idempotent=bool(policy["tools"]["calc"].get("idempotent", False)),
    )
    http: HttpServer | None = None
    current = "start the server"
    try:
        if a.transport == "http":
            http = HttpServer([a.bin, *server_args(a)])
        target: str | StdioServerParameters = (
            http.url if http else StdioServerParameters(command=a.bin, args=server_args(a))
        )
        current = "connect"
        async with Client(target, mode=a.mode, read_timeout_seconds=60) as client:
            run.client = client
            for current, case in CASES:
                await case(run)
                run.passed.append(current)
            version = client.protocol_version
        if a.transport == "stdio":
            current = "bad_arguments_2025_06_18"
            bad_arguments_2025_06_18(run)
            run.passed.append(current)
    except BaseException as e:
        return failed(e, f"{a.transport} {a.mode} {current}")
    finally:
        if http:
            http.stop()
            if run.passed != [n for n, _ in CASES]:
                print("server stderr:\n" + "".join(http.log), file=sys.stderr)
    print(json.dumps({"transport": a.transport, "mode": a.mode, "protocol_version": version, "passed": run.passed}))
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--cache-dir", required=True)
    p.add_argument("--state-dir", required=True)
    p.add_argument("--policy", required=True)
    p.add_argument("--tools", required=True, help="comma-separated .wasm paths")
    p.add_argument("--transport", choices=("stdio", "http"), required=True)
    p.add_argument("--mode", choices=MODES, required=True)
    sys.exit(anyio.run(main, p.parse_args()))
