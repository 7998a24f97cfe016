"""Two `toolhost mcp --http --database URL` replicas behind a round-robin proxy, driven by the
official MCP Python SDK (`mcp`, pinned in requirements.txt) in 2026-07-28 stateless mode; one
replica is SIGKILLed mid-task.

The SDK (2.3.0) has no API for the tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663):
its `Client(extensions=[...])` lets an extension claim a result shape, so `Tasks` below is that
extension, written against the SDK's own session: it declares the capability, claims
`resultType: "task"` results, and resolves one by polling `tasks/get`, each request stamped and
sent by the SDK's session (its `_meta`, `Mcp-Method` and `Mcp-Name` headers).

The policy must be tests/all/mcp/durable.rs's: `again.slow-compute` (idempotent by policy) and
`once.slow-compute` (not), both tasks. The story:
1. a quick task through `client.call_tool`, resolved by the extension (started on one replica,
   polled through whichever the proxy picks);
2. two `again` and two `once` tasks started back to back: the proxy alternates, so each
   replica runs one of each; the journals say which runs which;
3. the first replica given is SIGKILLed while running its two;
4. every request from then on goes through the proxy and must succeed: its `again` task is
   taken over and completes (run again on the other replica), its `once` task ends `failed`
   (`replica_lost`), the other replica's `again` completes, its `once` is cancelled.

It stops at the first failure, naming it, and exits 1; on success it prints one JSON line.
Run by the Rust test tests/all/mcp/replicas.rs.
"""


import argparse
import glob
import json
import os
import signal
import sys
import time
import traceback
from typing import Any, Literal

import anyio
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types import CallToolResult, CancelTaskRequest, CancelTaskRequestParams, GetTaskRequest
from mcp_types import GetTaskRequestParams, Result
from pydantic import ConfigDict, TypeAdapter

TASKS = "io.modelcontextprotocol/tasks"
ANY = TypeAdapter(dict[str, Any])


class CaseFailed(Exception):
    pass


def check(cond: bool, what: str, *detail: Any) -> None:
    if not cond:
        raise CaseFailed(what + "".join(f"\n  {d!r}" for d in detail))


class TaskGet(GetTaskRequest):
    """`tasks/get`, its task id mirrored into `Mcp-Name` (SEP-2663)."""

    name_param = "taskId"


class TaskCancel(CancelTaskRequest):
    """`tasks/cancel`, its task id mirrored into `Mcp-Name`."""

    name_param = "taskId"


class TaskCreated(Result):
    """A `tools/call` answered with a task (`resultType: "task"`)."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]
    task_id: str
    status: str


async def get(session: Any, task_id: str) -> dict[str, Any]:
    return await session.send_request(TaskGet(params=GetTaskRequestParams(task_id=task_id)), ANY)


async def until_ended(session: Any, task_id: str, limit_s: float) -> dict[str, Any]:
    """Polls `tasks/get` until the task no longer works; the task."""
    started = time.monotonic()
    while True:
        task = await get(session, task_id)
        if task.get("status") != "working":
            return task
        check(time.monotonic() - started < limit_s, f"task {task_id} still working after {limit_s} s", task)
        await anyio.sleep(0.1)


async def resolve(created: TaskCreated, ctx: ClaimContext) -> CallToolResult:
    task = await until_ended(ctx.session, created.task_id, 60)
    check(task.get("status") == "completed", "the claimed task did not complete", task)
    return CallToolResult.model_validate(task["result"])


class Tasks(ClientExtension):
    """The tasks extension on the SDK's extension hooks (the SDK ships none)."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=resolve)]


def text(result: dict[str, Any]) -> str:
    return result.get("content", [{}])[0].get("text", "")


def started_on(replicas: dict[str, tuple[int, str]], label: str) -> str | None:
    """The replica whose journal shows the call labelled `label` started."""
    for name, (_, state) in replicas.items():
        for path in glob.glob(os.path.join(state, "runs", "*.jsonl")):
            for line in open(path):
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("kind") == "step_started" and r.get("data", {}).get("args", {}).get("label") == label:
                    return name
    return None


async def placed(replicas: dict[str, tuple[int, str]], labels: list[str]) -> dict[str, str]:
    """Waits until each call has started somewhere; label → replica."""
    deadline = time.monotonic() + 20
    while True:
        where = {label: started_on(replicas, label) for label in labels}
        if all(where.values()):
            return where  # type: ignore[return-value]
        check(time.monotonic() < deadline, "not every call started", where)
        await anyio.sleep(0.05)


async def main(a: argparse.Namespace) -> int:
    replicas = {}
    for spec in a.replica:
        name, pid, state = spec.split("=", 2)
        replicas[name] = (int(pid), state)
    victim = a.replica[0].split("=", 1)[0]
    passed: list[str] = []
    current = "connect"
    try:
        async with Client(a.url, mode="2026-07-28", extensions=[Tasks()], read_timeout_seconds=60) as c:
            current = "list_tools"
            names = {t.name for t in (await c.list_tools()).tools}
            check({"again.slow-compute", "once.slow-compute"} <= names, "the two task tools are listed", names)
            passed.append(current)

            current = "a task resolved by the extension"
            r = await c.call_tool("again.slow-compute", {"seconds": 0, "label": "quick"})
            check(r.content[0].text == "computed `quick` in 0 s", "the quick task's result", r)
            passed.append(current)

            current = "four tasks started"
            ids: dict[str, str] = {}
            for tool, seconds, label in [
                ("again", 3, "survivor-1"),
                ("again", 3, "survivor-2"),
                ("once", 30, "orphan-1"),
                ("once", 30, "orphan-2"),
            ]:
                made = await c.session.call_tool(
                    f"{tool}.slow-compute", {"seconds": seconds, "label": label}, allow_claimed=True
                )
                check(isinstance(made, TaskCreated) and made.status == "working", f"{label} is a task", made)
                ids[label] = made.task_id
            where = await placed(replicas, list(ids))
            mine = sorted(label for label, r in where.items() if r == victim)
            check(
                len(mine) == 2 and mine[0].startswith("orphan") and mine[1].startswith("survivor"),
                f"replica {victim} runs one call of each kind",
                where,
            )
            passed.append(current)

            current = f"SIGKILL {victim} mid-task"
            os.kill(replicas[victim][0], signal.SIGKILL)
            killed_at = time.monotonic()
            passed.append(current)

            current = "the idempotent task is taken over and completes"
            survivor, orphan = mine[1], mine[0]
            done = await until_ended(c.session, ids[survivor], 30)
            check(done.get("status") == "completed", f"{survivor} completed", done)
            check(text(done["result"]) == f"computed `{survivor}` in 3 s", f"{survivor}'s result", done)
            check(started_on({k: v for k, v in replicas.items() if k != victim}, survivor), "run again elsewhere")
            passed.append(current)

            current = "the other task ends failed"
            failed = await until_ended(c.session, ids[orphan], 30)
            check(failed.get("status") == "failed", f"{orphan} failed", failed)
            check(failed["error"]["data"]["kind"] == "replica_lost", f"{orphan} names why", failed)
            passed.append(current)

            current = "the other replica's tasks go on"
            other = [label for label, r in where.items() if r != victim]
            again = next(label for label in other if label.startswith("survivor"))
            done = await until_ended(c.session, ids[again], 30)
            check(done.get("status") == "completed", f"{again} completed", done)
            once = next(label for label in other if label.startswith("orphan"))
            await c.session.send_request(TaskCancel(params=CancelTaskRequestParams(task_id=ids[once])), ANY)
            check((await get(c.session, ids[once])).get("status") == "cancelled", f"{once} cancelled")
            passed.append(current)
    except BaseException as e:  # noqa: BLE001 - reported, then the exit status says it
        print(f"FAIL {current}: {type(e).__name__}: {e}", file=sys.stderr)
        traceback.print_exception(e)
        return 1
    took = round(time.monotonic() - killed_at, 1)
    print(json.dumps({"passed": passed, "after_kill_s": took}))
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", required=True, help="the proxy's /mcp URL")
    p.add_argument("--replica", action="append", required=True, help="NAME=PID=STATE_DIR; the first is killed")
    sys.exit(anyio.run(main, p.parse_args()))
