#!/usr/bin/env python3
"""The BFCL trajectories in plain Python, and their agreement with a sandboxed run.

The plain side is bfcl-eval's own: the ground-truth calls of each multi-turn base entry go
through the package's `execute_multi_turn_func_call` one call at a time (it keeps one
instance per class for the entry, as BFCL's checker does), timed per call. `convert.py`
writes the suite's expected end states from it; after `toolhost eval` has run the suite,

    plain.py --suite tests/bfcl/suite --eval target/bfcl.json [--out FILE]

runs every trajectory again in this process, loads each task's sandboxed end state (the
files the tools left in its `state/`) back into instances of the package's classes, and
compares the two with BFCL's `state_checker`; it also compares each step's result, from
the task's journal, with the plain call's (the values BFCL's `response_checker` looks at),
and prints the agreement and the time per step of both sides.
"""

import argparse
import ast
import importlib
import importlib.resources
import importlib.util
import inspect
import json
import platform
import re
import statistics
import sys
import time
from pathlib import Path

CATEGORY = "BFCL_v4_multi_turn_base"
ROOT = Path(__file__).resolve().parents[2]


def _module(name, path):
    # Loaded from their files, not through sys.path: tools/bfcl/py also holds the vendored
    # copy of the backends, and the plain side must run the installed package.
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bfcl_state = _module("bfcl_state", "tools/bfcl/py/bfcl_state.py")
# The generator: the pinned version, the tool of each backend class, WIT names.
gen = _module("bfcl_gen", "tools/bfcl/gen.py")


def entries():
    """(question entry, ground truth) of every entry of the category, in file order."""
    data = importlib.resources.files("bfcl_eval") / "data"
    read = lambda f: [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    questions = read(data / f"{CATEGORY}.json")
    answers = {a["id"]: a["ground_truth"] for a in read(data / "possible_answer" / f"{CATEGORY}.json")}
    return [(q, answers[q["id"]]) for q in questions]


def backend(class_name):
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    return getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)


def stateless(class_name):
    from bfcl_eval.constants.executable_backend_config import STATELESS_CLASSES

    return class_name in STATELESS_CLASSES


class Call:
    """One ground-truth call: its text, and the method and arguments it names."""

    def __init__(self, turn, text, classes):
        self.turn = turn
        self.text = text
        node = ast.parse(text, mode="eval").body
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            raise ValueError(f"`{text}` is not a call of a function by name")
        self.method = node.func.id
        owners = [c for c in classes if self.method in _methods(c)]
        if len(owners) != 1:
            raise ValueError(f"`{self.method}` is a method of {len(owners)} of the entry's classes {classes}")
        self.class_name = owners[0]
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        signature = inspect.signature(getattr(backend(self.class_name), self.method))
        # Positional arguments named as Python binds them (`sort('final_report.pdf')`).
        bound = signature.bind(None, *args, **kwargs)
        self.args = {k: v for k, v in bound.arguments.items() if k != "self"}


def _methods(class_name):
    return {n for n, _ in inspect.getmembers(backend(class_name), inspect.isfunction) if not n.startswith("_")}


def calls(entry, ground_truth):
    classes = entry["involved_classes"]
    return [Call(turn, text, classes) for turn, texts in enumerate(ground_truth) for text in texts]


def run(entry, ground_truth, tag):
    """Runs the trajectory through BFCL's helper one call at a time: (results, seconds
    per call, the instances by class). `tag` keeps this run's instances apart from
    another run's of the same entry (the helper keeps them in its module's globals)."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

    results, seconds, instances = [], [], {}
    for call in calls(entry, ground_truth):
        start = time.perf_counter()
        out, instances = execute_multi_turn_func_call(
            func_call_list=[call.text],
            initial_config=entry["initial_config"],
            involved_classes=entry["involved_classes"],
            model_name=tag,
            test_entry_id=entry["id"],
            long_context=False,
        )
        seconds.append(time.perf_counter() - start)
        results += out
    if not instances:
        # A trajectory without calls still has its classes' initial state.
        _, instances = execute_multi_turn_func_call([], entry["initial_config"], entry["involved_classes"], tag, entry["id"])
    return results, seconds, instances


def sandboxed_instances(entry, state_dir):
    """The sandboxed run's end state: each stateful class's instance from `state_dir`."""
    out = {}
    for class_name in entry["involved_classes"]:
        cls = backend(class_name)
        if stateless(class_name):
            out[class_name] = cls()
        else:
            out[class_name] = bfcl_state.load(cls, str(state_dir))
    return out


def journal_outputs(path):
    """Each tool call's output from a run's journal, in the order the steps started (None
    for a step without one). Values stored once as `blob` records are resolved."""
    records = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    blobs = {f"sha256:{r['data']['sha256']}": r["data"]["value"] for r in records if r["kind"] == "blob"}

    def resolve(v):
        if isinstance(v, dict):
            if "$blob" in v:
                return v["value"] if v["$blob"] == "literal" else blobs[v["$blob"]]
            return {k: resolve(x) for k, x in v.items()}
        if isinstance(v, list):
            return [resolve(x) for x in v]
        return v

    order = [r["data"]["id"] for r in records if r["kind"] == "step_started"]
    finished = {r["data"]["id"]: resolve(r["data"].get("output")) for r in records if r["kind"] == "step_finished"}
    return [finished.get(i) for i in order]


REDACTED = re.compile(r"\\\[redacted:[a-z_]+\\\]")


def same_result(journaled, plain_result):
    """"equal"; "redacted" when they are equal but for what the journal redacted (the
    journal replaces card-number-like digit runs, e-mail addresses, ... with
    `[redacted:KIND]` before writing); or "different"."""
    if journaled == plain_result:
        return "equal"
    if isinstance(journaled, str) and isinstance(plain_result, str) and "[redacted:" in journaled:
        pattern = REDACTED.sub(".+?", re.escape(journaled))
        if re.fullmatch(pattern, plain_result, flags=re.DOTALL):
            return "redacted"
    return "different"


def median_ms(values):
    return statistics.median(values) * 1000 if values else float("nan")


def compare(suite, eval_json, repeat):
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import state_checker

    report = json.loads(Path(eval_json).read_text(encoding="utf-8"))
    by_id = {e["id"]: (e, gt) for e, gt in entries()}
    rows, plain_steps, sandbox_steps, differing = [], [], [], []
    by_class = {}
    for task in report["tasks"]:
        entry, gt = by_id[task["id"]]
        best = None
        for k in range(repeat):
            results, seconds, instances = run(entry, gt, f"plain_{k}")
            best = seconds if best is None else [min(a, b) for a, b in zip(best, seconds)]
        plain_steps += best
        sandboxed = [ms / 1000 for ms in task.get("step_ms", [])]
        sandbox_steps += sandboxed
        if len(sandboxed) == len(best):
            for c, a, b in zip(calls(entry, gt), sandboxed, best):
                pair = by_class.setdefault(c.class_name, ([], []))
                pair[0].append(a)
                pair[1].append(b)
        outputs = journal_outputs(task["journal"])
        if len(outputs) != len(results):
            outputs = [None] * len(results)
        verdicts = [same_result(a, b) for a, b in zip(outputs, results)]
        for c, v, a, b in zip(calls(entry, gt), verdicts, outputs, results):
            if v == "different":
                differing.append({"id": task["id"], "call": c.text, "sandboxed": a, "plain": b})
        try:
            mine = sandboxed_instances(entry, Path(suite) / task["id"] / "state")
            verdict = state_checker(mine, instances)
            why = "" if verdict["valid"] else json.dumps(verdict.get("details", {}).get("differences"), default=str)[:300]
        except bfcl_state.StateError as e:
            verdict, why = {"valid": False}, f"state: {e}"
        rows.append(
            {
                "id": task["id"],
                "passed": task["passed"],
                "state_agrees": verdict["valid"],
                "why": why,
                "results": {v: verdicts.count(v) for v in ("equal", "redacted", "different")},
                "steps": len(results),
                "plain_ms": [s * 1000 for s in best],
                "sandbox_ms": task.get("step_ms", []),
            }
        )
    agree = sum(r["state_agrees"] for r in rows)
    results = {v: sum(r["results"][v] for r in rows) for v in ("equal", "redacted", "different")}
    passed = sum(r["passed"] for r in rows)
    summary = {
        "tasks": len(rows),
        "eval_passed": passed,
        "state_agreement": agree,
        "steps": len(plain_steps),
        "results": results,
        "results_differing": differing,
        "plain_python": platform.python_version(),
        "by_class": {
            c: {"steps": len(a), "sandbox_ms_median": median_ms(a), "plain_ms_median": median_ms(b)}
            for c, (a, b) in sorted(by_class.items())
        },
        "sandbox_ms_per_step_median": median_ms(sandbox_steps),
        "sandbox_ms_per_step_mean": statistics.fmean(sandbox_steps) * 1000 if sandbox_steps else None,
        "plain_ms_per_step_median": median_ms(plain_steps),
        "plain_ms_per_step_mean": statistics.fmean(plain_steps) * 1000 if plain_steps else None,
    }
    return summary, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, required=True, help="the suite directory the eval ran")
    parser.add_argument("--eval", type=Path, required=True, help="the eval's --json output")
    parser.add_argument("--repeat", type=int, default=1, help="plain runs per trajectory; the fastest time per call counts (default 1, as the sandboxed side)")
    parser.add_argument("--out", type=Path, help="write the summary and per-task rows here (JSON)")
    args = parser.parse_args()
    gen.check_installed()
    summary, rows = compare(args.suite, args.eval, max(1, args.repeat))
    for r in rows:
        if not r["state_agrees"]:
            print(f"disagree: {r['id']}: {r['why']}")
    s = summary
    print(f"bfcl: {s['eval_passed']}/{s['tasks']} tasks passed the eval's checks")
    print(f"bfcl: end state agrees with plain Python (BFCL's state_checker): {s['state_agreement']}/{s['tasks']}")
    r = s["results"]
    print(
        f"bfcl: step results equal to plain Python's (what BFCL's response_checker compares): {r['equal']}/{s['steps']}, "
        f"{r['redacted']} more equal but for the journal's redaction, {r['different']} different"
    )
    for d in s["results_differing"]:
        print(f"  {d['id']}: {d['call']}: sandboxed {d['sandboxed']!r}, plain Python {s['plain_python']} {d['plain']!r}")
    print(
        f"bfcl: {s['steps']} steps; median ms/step sandboxed {s['sandbox_ms_per_step_median']:.2f}, "
        f"plain Python {s['plain_ms_per_step_median']:.4f} "
        f"(mean {s['sandbox_ms_per_step_mean']:.2f} vs {s['plain_ms_per_step_mean']:.4f})"
    )
    for c, v in s["by_class"].items():
        print(f"  {c:18} {v['steps']:4} steps  median ms/step sandboxed {v['sandbox_ms_median']:6.2f}, plain {v['plain_ms_median']:.4f}")
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "tasks": rows}, indent=1) + "\n", encoding="utf-8")
    return 0 if s["state_agreement"] == s["tasks"] else 1


if __name__ == "__main__":
    sys.exit(main())
