#!/usr/bin/env python3
"""Writes the BFCL-derived golden suite from the installed bfcl-eval package.

Every entry of the multi-turn base category (`BFCL_v4_multi_turn_base`) whose classes all
have a tool in tools/bfcl becomes a golden task (the format of docs/eval-suites.md) in
`suite/ID/task.toml`: its ground-truth calls, every turn's in order, as the steps of a
scripted plan (`plan.json`; each step after the one before: they share the backends' state), the same
calls as step-wise turns and as a code-mode program over the tools' typed Python API (also in
`plan.json`, so `toolhost eval --mode step-wise` or `--mode code` runs the suite in that mode), a set-up
copy of each stateful class's initial configuration into the task's `state/`, the policy
`policy/ID.toml` (only the task's tools; each granted `state/` read-write and nothing
else), the calls as the expected sequence, and each called class's end state, from the
same trajectory run through bfcl-eval's own helper in plain Python (`plain.py`), as an
`equals_json` end-state check. Entries that cannot be converted are reported with the
reason and left out. Run by scripts/bfcl.sh:

    target/bfcl/venv/bin/python tests/bfcl/convert.py
"""

import argparse
import json
import sys
from pathlib import Path

import plain

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from pynames import py_name  # noqa: E402


gen = plain.gen
TOOL_OF = {cls: tool for tool, cls in gen.BACKENDS}
STATE = "state"


class Skip(Exception):
    pass


def toml(v):
    """`v` as a TOML value (inline tables for dicts)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        # JSON's numbers and strings (escapes included) are TOML's too.
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml(x)}" for k, x in v.items()) + " }" if v else "{}"
    raise Skip(f"{v!r} has no TOML form")


def fits(value, doc):
    """Whether a ground-truth argument has the type the function docs (and so the tool's
    WIT signature) give it. Integers fit `float` (JSON does not tell them apart)."""
    t = doc.get("type")
    if t == "string":
        return isinstance(value, str)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "array":
        return isinstance(value, list) and all(fits(x, doc.get("items", {})) for x in value)
    if t == "dict":
        props = doc.get("properties", {})
        return isinstance(value, dict) and all(k in props and fits(x, props[k]) for k, x in value.items())
    return False


def step_args(call, backends):
    """The call's arguments by WIT name, checked against the function docs."""
    b = backends[call.class_name]
    doc = b.docs[call.method]["parameters"]["properties"]
    out = {}
    for name, value in call.args.items():
        if not fits(value, doc[name]):
            raise Skip(f"`{call.text}`: {name}={value!r} is not the documented {doc[name].get('type')}")
        if isinstance(value, dict):
            # A record: every field named (the WIT record has them all), null if not given.
            value = {gen.kebab(k).lstrip("%"): value.get(k) for k in doc[name]["properties"]}
        out[gen.kebab(name).lstrip("%")] = value
    return out


def operation(call):
    return gen.WIT_RENAMES.get(call.method) or gen.kebab(call.method).lstrip("%")


def turns(steps):
    """The step-wise planner's turns: one call a turn, then stop."""
    return [{"tool": s["tool"], "operation": s["operation"], "arguments": s["args"]} for s in steps] + [{"stop": True}]


def program(entry, steps):
    """The code-mode program: every call in order through the typed API, grouped by turn,
    then `answer`. A call's value is not needed by the next (the ground truth spells out
    each argument), as in the plan."""
    lines = [f"# BFCL {entry['id']}: the ground-truth calls of every turn, in order."]
    turn = None
    for s in steps:
        if s["description"].split(":")[0] != turn:
            turn = s["description"].split(":")[0]
            lines.append(f"# {turn}")
        args = ", ".join(f"{py_name(k)}={v!r}" for k, v in s["args"].items())
        lines.append(f"{py_name(s['tool'])}.{py_name(s['operation'])}({args})")
    lines.append('answer("done")')
    return "\n".join(lines) + "\n"


def goal(entry):
    turns = [" ".join(m["content"] for m in turn if m.get("role") == "user") for turn in entry["question"]]
    return "\n".join(f"Turn {i + 1}: {t}" for i, t in enumerate(turns))


def plan(entry, calls, backends):
    """The scripted planner's plan: each call a step after the one before."""
    steps, previous = [], None
    for k, call in enumerate(calls):
        step = {
            "id": f"t{call.turn + 1}c{k + 1}",
            "description": f"turn {call.turn + 1}: {call.text}",
            "tool": TOOL_OF[call.class_name],
            "operation": operation(call),
            "args": step_args(call, backends),
        }
        if previous:
            step["depends_on"] = [previous]
        previous = step["id"]
        steps.append(step)
    return {
        "plan": {"goal": f"BFCL {entry['id']}: the ground-truth calls of every turn, in order", "steps": steps},
        "turns": turns(steps),
        "program": program(entry, steps),
    }


def task_text(entry, calls, called):
    tid = entry["id"]
    classes = entry["involved_classes"]
    tools = [TOOL_OF[c] for c in classes]
    lines = [
        f"# BFCL {tid} ({gen.PACKAGE} {gen.VERSION}), written by tests/bfcl/convert.py; do not edit.",
        f"id = {toml(tid)}",
        f"tags = {toml(['bfcl'] + sorted(classes))}",
        f"goal = {toml(goal(entry))}",
        'mode = "plan-then-execute"',
        f"policy = {toml(f'../../policy/{tid}.toml')}",
        f"tools = {toml(tools)}",
        "max_parallel = 1",
        "",
        "[budgets]",
        f"max_steps = {max(len(calls), 1)}",
        "max_replans = 0",
        "max_wall_ms = 300000",
        "# Room for step-wise's prompts, each carrying the history so far, as `--count-tokens`",
        "# charges them: the modes are compared at equal success.",
        "max_input_tokens = 1000000",
        "",
        "[planner]",
        "# The plan (and the same calls as step-wise turns and as a code-mode program), in JSON",
        "# since a record argument may hold nulls (TOML has none).",
        'script = "plan.json"',
    ]
    for c in classes:
        if not plain.stateless(c):
            lines += ["", "[[setup.copy]]", f'from = "initial/{c}.json"', f'to = "{STATE}/{c}.json"']
    lines += ["", "[expect]", f"sequence = {toml([f'{TOOL_OF[c.class_name]}.{operation(c)}' for c in calls])}"]
    for c in classes:
        if plain.stateless(c):
            continue
        # A class the trajectory never calls keeps its file as the set-up wrote it.
        want = f"expected/{c}.json" if c in called else f"initial/{c}.json"
        lines += ["", "[[expect.files]]", f'path = "{STATE}/{c}.json"', f"equals_json = {toml(want)}"]
    return "\n".join(lines) + "\n"


def policy_text(entry):
    tid = entry["id"]
    lines = [
        f"# The policy of BFCL task {tid}, written by tests/bfcl/convert.py: its tools only, each",
        "# with the task's state directory read-write and nothing else.",
        "version = 1",
        'approval = "deny"',
        "",
        "[defaults.limits]",
        "timeout_ms = 10000",
        "memory_mib = 128",
    ]
    for c in entry["involved_classes"]:
        lines += ["", f"[tools.{TOOL_OF[c]}]"]
        if not plain.stateless(c):
            lines.append(f'files = [{{ host = "../suite/{tid}/{STATE}", guest = "{gen.STATE_DIR}", access = "read-write" }}]')
    return "\n".join(lines) + "\n"


def dumps(value):
    return json.dumps(value, ensure_ascii=False, indent=1) + "\n"


def convert(entry, ground_truth, backends, suite, policies):
    """Adds the task's files to `suite` and its policy to `policies` (relative path ->
    text); returns the number of steps."""
    missing = [c for c in entry["involved_classes"] if c not in TOOL_OF]
    if missing:
        raise Skip(f"no tool for {', '.join(missing)}")
    try:
        calls = plain.calls(entry, ground_truth)
    except (ValueError, TypeError, SyntaxError) as e:
        raise Skip(f"a ground-truth call cannot be read: {e}")
    results, _, instances = plain.run(entry, ground_truth, "convert")
    failed = [(c.text, r) for c, r in zip(calls, results) if r.startswith("Error during execution")]
    if failed:
        raise Skip(f"`{failed[0][0]}` raises in plain Python: {failed[0][1]}")
    called = {c.class_name for c in calls}
    files = {"plan.json": dumps(plan(entry, calls, backends)), "task.toml": task_text(entry, calls, called)}
    for c in entry["involved_classes"]:
        if plain.stateless(c):
            continue
        files[f"initial/{c}.json"] = dumps({"class": c, "scenario": entry["initial_config"].get(c, {}), "long_context": False})
        if c in called:
            public, _ = plain.bfcl_state.encode(instances[c])
            files[f"expected/{c}.json"] = dumps(public)
    suite.update({f"{entry['id']}/{k}": v for k, v in files.items()})
    policies[f"{entry['id']}.toml"] = policy_text(entry)
    return len(calls)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="where suite/ and policy/ go (default: tests/bfcl)")
    args = parser.parse_args()
    gen.check_installed()
    backends = {cls: gen.Backend(tool, cls) for tool, cls in gen.BACKENDS}
    suite = {
        "suite.toml": "# The BFCL-derived suite, written by tests/bfcl/convert.py; do not edit.\n"
        'name = "bfcl"\n'
        "# Each task has its own state directory and policy, so tasks may run side by side.\n"
        "max_concurrent = 2\n"
    }
    policies = {}
    written, steps, skipped = 0, 0, []
    for entry, gt in plain.entries():
        try:
            steps += convert(entry, gt, backends, suite, policies)
            written += 1
        except Skip as e:
            skipped.append((entry["id"], str(e)))
    # A run's state/ directories go too: they are what the next run starts without.
    gen.sync(args.out / "suite", suite)
    gen.sync(args.out / "policy", policies)
    for tid, why in skipped:
        print(f"convert: skipped {tid}: {why}")
    print(f"convert: {written} tasks ({steps} steps) in {args.out / 'suite'}; {len(skipped)} entries skipped")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
