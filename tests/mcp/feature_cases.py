"""`toolhost mcp` features beyond plain JSON results, driven by the official MCP Python SDK.

The server serves the conformance fixture (tools/fixtures/conformance) with
`--tool-names operation --watch`, over stdio or streamable HTTP, and the client connects
in one mode (`legacy`: the initialize handshake at 2025-11-25; `2026-07-28`: stateless).
Cases:
  content   the content convention: text, image, audio and embedded-resource blocks, their
            base64 decoding to a PNG and a WAV
  logging   log records reach the client only at the level it asked for: none without one
            (`logging/setLevel` on legacy, `_meta` logLevel on 2026-07-28), only warning
            and error at `warning`, the logger named after the tool
  ask       a tool's question (`toolhost:host/ask`, granted by `ask = true`) put to the
            client's user: an elicitation answered, declined and cancelled; an accepted
            answer that fails the form's schema refused with an error naming the field (on
            2026-07-28 through `input_required` results and the client's retries)
  approve   a `sensitive` section's call approved by the client's user runs; refused, it
            never runs, is an `isError` result of kind `denied`, and is journaled as such
  listen    2026-07-28 only: a `subscriptions/listen` stream hears
            `notifications/tools/list_changed` when the operator narrows the policy and
            `--watch` reloads it, and tools/list then shows the narrowed list
Exits 1 naming the first failing case; on success prints {"transport", "mode", "passed"}.

Run by tests/all/mcp/features.rs; by hand:
    target/guest-langs/mcp-venv/bin/python tests/mcp/feature_cases.py --bin target/release/toolhost \
        --tool target/fixtures/conformance.wasm --dir /tmp/x --transport http --mode 2026-07-28
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult
from mcp.client.subscriptions import ToolsListChanged

from client_cases import HttpServer, check, failed


POLICY = "version = 1\n[tools.conformance]\nask = true\n"
SENSITIVE = POLICY + "sensitive = true\n"
NARROWED = POLICY + 'operations = ["test-simple-text"]\n'


def server_args(a: argparse.Namespace) -> list[str]:
    return [
        "--cache-dir", os.path.join(a.dir, "cache"),
        "--state-dir", os.path.join(a.dir, "state"),
        "mcp", "--tool-names", "operation", "--watch",
        "--policy", os.path.join(a.dir, "policy.toml"), a.tool,
    ]


def blocks(result: Any, kind: str) -> list[Any]:
    return [c for c in result.content if getattr(c, "type", None) == kind]


async def content(c: Client) -> None:
    r = await c.call_tool("test_simple_text", {})
    check(r.is_error is not True and len(blocks(r, "text")) == 1, "one text block", r)
    check(r.structured_content is None, "a content result has no structuredContent", r)
    img = blocks(await c.call_tool("test_image_content", {}), "image")
    check(len(img) == 1 and img[0].mime_type == "image/png", "one PNG image block", img)
    check(base64.b64decode(img[0].data).startswith(b"\x89PNG\r\n\x1a\n"), "the image decodes to a PNG", img)
    audio = blocks(await c.call_tool("test_audio_content", {}), "audio")
    check(len(audio) == 1 and audio[0].mime_type == "audio/wav", "one WAV audio block", audio)
    check(base64.b64decode(audio[0].data)[8:12] == b"WAVE", "the audio decodes to a WAV", audio)
    res = blocks(await c.call_tool("test_embedded_resource", {}), "resource")
    check(len(res) == 1, "one embedded resource", res)
    check(res[0].resource.uri == "test://embedded-resource" and res[0].resource.mime_type == "text/plain",
          "the resource's uri and type", res)
    check(bool(res[0].resource.text), "the resource's text", res)
    mixed = await c.call_tool("test_multiple_content_types", {})
    check([b.type for b in mixed.content] == ["text", "image", "resource"], "blocks in order", mixed.content)
    listed = {t.name: t for t in (await c.list_tools()).tools}
    check(listed["test_simple_text"].output_schema is None, "a content tool lists no outputSchema",
          listed["test_simple_text"])


async def logging(a: argparse.Namespace, target: Any) -> None:
    got: list[Any] = []

    async def on_log(params: Any) -> None:
        got.append(params)

    async def two_records() -> None:
        # Over HTTP the records may come on the session's stream, beside the call's response.
        deadline = time.monotonic() + 5
        while len(got) < 2 and time.monotonic() < deadline:
            await anyio.sleep(0.05)

    legacy = a.mode == "legacy"
    # No level asked for: nothing arrives (a logging_callback alone is not an opt-in).
    async with Client(target, mode=a.mode, logging_callback=on_log, read_timeout_seconds=60) as c:
        await c.call_tool("test_logging_tool", {})
        await anyio.sleep(0.3)
        check(got == [], "log records reached a client that asked for no level", got)
        if legacy:
            await c.set_logging_level("warning")
            await c.call_tool("test_logging_tool", {})
            await two_records()
    if not legacy:
        async with Client(target, mode=a.mode, logging_callback=on_log, log_level="warning",
                          read_timeout_seconds=60) as c:
            await c.call_tool("test_logging_tool", {})
            await two_records()
    check([p.level for p in got] == ["warning", "error"], "only the records at warning and above", got)
    check(all(p.logger == "test_logging_tool" for p in got), "the logger is the tool", got)


async def listen(a: argparse.Namespace, c: Client) -> None:
    policy = os.path.join(a.dir, "policy.toml")
    async with c.listen(tools_list_changed=True) as sub:
        # The policy's mtime must move past the last one --watch saw.
        await anyio.sleep(1.1)
        with open(policy, "w") as f:
            f.write(NARROWED)
        with anyio.fail_after(10):
            event = await sub.__anext__()
        check(isinstance(event, ToolsListChanged), "a tools/list_changed event", event)
    names = [t.name for t in (await c.list_tools()).tools]
    check(names == ["test_simple_text"], "the narrowed tool list", names)


def user(answers: list[ElicitResult], asked: list[Any]) -> Any:
    """An elicitation callback that gives the next of `answers`, noting what it was asked."""

    async def answer(_ctx: Any, params: Any) -> ElicitResult:
        asked.append(params)
        return answers.pop(0)

    return answer


async def ask(a: argparse.Namespace, target: Any) -> None:
    who = {"username": "ann", "email": "ann@example.com"}
    answers = [
        ElicitResult(action="accept", content=who),
        ElicitResult(action="decline"),
        ElicitResult(action="cancel"),
        ElicitResult(action="accept", content={"username": 5, "email": "ann@example.com"}),
    ]
    asked: list[Any] = []
    async with Client(target, mode=a.mode, elicitation_callback=user(answers, asked),
                      read_timeout_seconds=60) as c:
        for action in ("accept", "decline", "cancel"):
            r = await c.call_tool("test_elicitation", {"message": "Who are you?"})
            said = r.content[0].text if r.content else ""
            check(r.is_error is not True and f"action={action}" in said, f"the tool hears {action}", r)
            if action == "accept":
                check("ann@example.com" in said, "the tool gets the user's answer", said)
        check(asked and asked[0].message == "Who are you?", "the user was asked the tool's message", asked)
        try:
            r = await c.call_tool("test_elicitation", {"message": "Who are you?"})
            raise AssertionError(f"an answer that fails the schema reached the tool: {r}")
        except MCPError as e:
            check(e.error.code == -32602, "a bad answer is invalid params", e.error)
            check("does not match its schema" in e.error.message and "username" in e.error.message,
                  "the error names the field and the schema", e.error.message)


def journaled(a: argparse.Namespace) -> str:
    text = ""
    for base, _, files in os.walk(os.path.join(a.dir, "state")):
        for f in files:
            with open(os.path.join(base, f), errors="replace") as fh:
                text += fh.read()
    return text


async def approve(a: argparse.Namespace) -> None:
    with open(os.path.join(a.dir, "policy.toml"), "w") as f:
        f.write(SENSITIVE)
    http = HttpServer([a.bin, *server_args(a)]) if a.transport == "http" else None
    target: Any = http.url if http else StdioServerParameters(command=a.bin, args=server_args(a))
    answers = [
        ElicitResult(action="accept", content={"approve": True}),
        ElicitResult(action="accept", content={"approve": False}),
        ElicitResult(action="decline"),
    ]
    asked: list[Any] = []
    try:
        async with Client(target, mode=a.mode, elicitation_callback=user(answers, asked),
                          read_timeout_seconds=60) as c:
            ran = await c.call_tool("test_simple_text", {})
            check(ran.is_error is not True and ran.content[0].type == "text", "an approved call runs", ran)
            check("test_simple_text" in asked[0].message, "the approval names the tool", asked)
            for _ in range(2):
                refused = await c.call_tool("test_simple_text", {})
                check(refused.is_error is True, "a refused call is an error result", refused)
                error = (refused.structured_content or {}).get("error", {})
                check(error.get("kind") == "denied" and "did not run" in error.get("message", ""),
                      "refused as denied, never run", refused)
    finally:
        if http:
            http.stop()
    journal = journaled(a)
    check(journal.count("did not approve") + journal.count("was not approved") >= 2,
          "the refused calls are journaled as refused", journal[-2000:])


async def main(a: argparse.Namespace) -> int:
    with open(os.path.join(a.dir, "policy.toml"), "w") as f:
        f.write(POLICY)
    http = HttpServer([a.bin, *server_args(a)]) if a.transport == "http" else None
    target: Any = http.url if http else StdioServerParameters(command=a.bin, args=server_args(a))
    passed: list[str] = []
    current = "content"
    try:
        async with Client(target, mode=a.mode, read_timeout_seconds=60) as c:
            await content(c)
            passed.append(current)
            if a.mode == "2026-07-28":
                current = "listen"
                await listen(a, c)
                passed.append(current)
        with open(os.path.join(a.dir, "policy.toml"), "w") as f:
            f.write(POLICY)
        if http is not None and a.mode == "2026-07-28":
            await anyio.sleep(1.1)  # the reload of the widened policy (stdio starts afresh)
        current = "logging"
        await logging(a, target)
        passed.append(current)
        current = "ask"
        await ask(a, target)
        passed.append(current)
    except BaseException as e:
        return failed(e, f"{a.transport} {a.mode} {current}")
    finally:
        if http:
            http.stop()
            if current not in passed:
                print("server stderr:\n" + "".join(http.log), file=sys.stderr)
    try:
        current = "approve"
        await approve(a)
        passed.append(current)
    except BaseException as e:
        return failed(e, f"{a.transport} {a.mode} {current}")
    print(json.dumps({"transport": a.transport, "mode": a.mode, "passed": passed}))
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--tool", required=True, help="the conformance fixture's .wasm")
    p.add_argument("--dir", required=True, help="an empty directory for the policy, state and cache")
    p.add_argument("--transport", choices=("stdio", "http"), required=True)
    p.add_argument("--mode", choices=("legacy", "2026-07-28"), required=True)
    sys.exit(anyio.run(main, p.parse_args()))
