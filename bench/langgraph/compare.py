"""The scale benchmark's workloads in LangGraph, side by side with toolhost (not in CI).

Each workload runs in LangGraph (a StateGraph compiled with a SqliteSaver checkpointer on
disk, durability="sync": every step's checkpoint is committed before the next step runs,
what a user would pick instead of a journal) and in toolhost's engine (the bench binary's
`--plan SHAPE N`: calc steps through the policy gate, journaled on disk), and the script
prints the per-step cost of each and their ratio. Shapes:

toolhost runs each workload twice: with every step's start synced (fdatasync) before the
step runs, like for like with durability="sync", and with steps marked idempotent
(written to the journal, no sync per step). Ratios are LangGraph over the synced toolhost.

- chain N: step i adds 1 to step i - 1's output. LangGraph twice: as N nodes in a line,
  and as one node looping N times (the cheaper way to write it there).
- independent N: N steps that depend on nothing. LangGraph: N nodes fanned out from START
  in one superstep, their results merged by a reducer.

Usage (bench/langgraph.sh makes the venv and builds the bench first):
    python compare.py BENCH_BINARY [--sizes 100,1000,10000] [--wide 1000]
"""

import argparse
import operator
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Annotated, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph


class Chain(TypedDict):
    value: float
    left: int


class Wide(TypedDict):
    results: Annotated[list, operator.add]


def checkpointer(dir_):
    conn = sqlite3.connect(os.path.join(dir_, "lg.sqlite"), check_same_thread=False)
    conn.execute("PRAGMA synchronous=FULL")
    return SqliteSaver(conn)


def run(graph, state, n, dir_):
    app = graph.compile(checkpointer=checkpointer(dir_))
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": n + 10}
    t = time.perf_counter()
    out = app.invoke(state, config, durability="sync")
    return time.perf_counter() - t, out


def chain_nodes(n, dir_):
    g = StateGraph(Chain)
    for i in range(n):
        g.add_node(f"s{i}", lambda s: {"value": s["value"] + 1})
        g.add_edge(START if i == 0 else f"s{i - 1}", f"s{i}")
    g.add_edge(f"s{n - 1}", END)
    took, out = run(g, {"value": 0, "left": n}, n, dir_)
    assert out["value"] == n, out
    return took


def chain_loop(n, dir_):
    g = StateGraph(Chain)
    g.add_node("step", lambda s: {"value": s["value"] + 1, "left": s["left"] - 1})
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["left"] > 0 else END)
    took, out = run(g, {"value": 0, "left": n}, n, dir_)
    assert out["value"] == n, out
    return took


def independent(n, dir_):
    g = StateGraph(Wide)
    for i in range(n):
        g.add_node(f"s{i}", lambda s, i=i: {"results": [i * 2 + 1]})
        g.add_edge(START, f"s{i}")
        g.add_edge(f"s{i}", END)
    took, out = run(g, {"results": []}, n, dir_)
    assert len(out["results"]) == n, len(out["results"])
    return took


def toolhost(bench, shape, n, synced):
    cmd = [bench, "--plan", shape, str(n)] + (["--synced"] if synced else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return int(re.search(r"us=(\d+)", out).group(1)) / 1e6


def median(f, samples):
    xs = []
    for _ in range(samples):
        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/var/tmp")) as d:
            xs.append(f(d))
    return statistics.median(xs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("bench")
    p.add_argument("--sizes", default="100,1000,10000")
    p.add_argument("--wide", type=int, default=1000)
    a = p.parse_args()
    rows = []
    for n in [int(x) for x in a.sizes.split(",")]:
        samples = 5 if n <= 1000 else 1
        th = median(lambda d: toolhost(a.bench, "chain", n, True), samples)
        th_written = median(lambda d: toolhost(a.bench, "chain", n, False), samples)
        nodes = median(lambda d: chain_nodes(n, d), samples)
        loop = median(lambda d: chain_loop(n, d), samples)
        rows.append((f"chain of {n:,}", n, th, th_written,
                     [("nodes", nodes), ("looping node", loop)]))
    n = a.wide
    th = median(lambda d: toolhost(a.bench, "independent", n, True), 5)
    th_written = median(lambda d: toolhost(a.bench, "independent", n, False), 5)
    fan = median(lambda d: independent(n, d), 5)
    rows.append((f"{n:,} independent", n, th, th_written, [("fan-out", fan)]))
    print("| workload | toolhost µs/step: synced (idempotent) | LangGraph µs/step |"
          " LangGraph / toolhost synced |")
    print("|---|---|---|---|")
    for name, n, th, th_written, lgs in rows:
        per = lambda s: s * 1e6 / n
        lg = "; ".join(f"{k} {per(v):.1f}" for k, v in lgs)
        ratio = "; ".join(f"{k} {v / th:.2f}×" for k, v in lgs)
        print(f"| {name} | {per(th):.1f} ({per(th_written):.1f}) | {lg} | {ratio} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
