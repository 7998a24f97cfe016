"""AgentDojo's banking suite (agentdojo==0.1.35, v1) through toolhost, scored by AgentDojo.

For each user task, and for each (user task, injection task) pair with the injection
task's goal placed at every injection vector of the environment: the environment is written
as the `bank` tool's state file, the user task's ground truth (`ground_truth()`) is run as a
scripted plan-then-execute plan by `toolhost run`, and the state the run leaves is scored
with the suite's own utility and security checks. Policies: `none` (no data-flow rules) and
`flow` (the rules of SECURITY.md). The scripted planner knows the ground truth without
reading anything and never follows an injection: this measures utility, utility under
attack and the data-flow policy's false refusals, not a hijacked planner.

Usage: banking.py TOOLHOST TOOLS_DIR OUT.json
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from agentdojo.functions_runtime import FunctionCall
from agentdojo.task_suite.load_suites import get_suite
from agentdojo.types import text_content_block_from_string

# Each operation's parameters, in the bank tool's WIT order: a call lists every one.
PARAMS = {
    "get_iban": [],
    "send_money": ["recipient", "amount", "subject", "date"],
    "schedule_transaction": ["recipient", "amount", "subject", "date", "recurring"],
    "update_scheduled_transaction": ["id", "recipient", "amount", "subject", "date", "recurring"],
    "get_balance": [],
    "get_most_recent_transactions": ["n"],
    "get_scheduled_transactions": [],
    "read_file": ["file_path"],
    "get_user_info": [],
    "update_password": ["password"],
    "update_user_info": ["first_name", "last_name", "street", "city"],
}
DEFAULTS = {"get_most_recent_transactions": {"n": 100}}

FLOW_RULES = """trusted_args = { send-money = ["recipient"], schedule-transaction = ["recipient"], update-scheduled-transaction = ["recipient"], update-password = ["password"] }
"""


def steps(calls: list[FunctionCall]) -> list[dict]:
    out = []
    for i, c in enumerate(calls):
        args = dict(DEFAULTS.get(c.function, {}), **c.args)
        step = {
            "id": f"s{i + 1}",
            "tool": "bank",
            "operation": c.function.replace("_", "-"),
            "args": {p.replace("_", "-"): args.get(p) for p in PARAMS[c.function]},
        }
        if i:
            step["depends_on"] = [f"s{i}"]
        out.append(step)
    return out


def run(toolhost: str, tools: str, env, task, rules: str, work: Path):
    """Runs `task`'s ground truth on `env`; (post environment, stop reason)."""
    (work / "bank").mkdir(parents=True, exist_ok=True)
    (work / "bank/state.json").write_text(env.model_dump_json())
    (work / "policy.toml").write_text(
        'version = 1\n[tools.bank]\nfiles = [{ host = "bank", guest = "/bank", access = "read-write" }]\n'
        + rules
    )
    plan = {"goal": task.PROMPT, "steps": steps(task.ground_truth(env.model_copy(deep=True)))}
    (work / "script.json").write_text(json.dumps({"plan": plan}))
    (work / "task.toml").write_text(
        f"goal = {json.dumps(task.PROMPT)}\npolicy = \"policy.toml\"\ntools = [\"bank\"]\n"
        "[planner]\nscript = \"script.json\"\n"
    )
    out = subprocess.run(
        [toolhost, "--state-dir", str(work / "state"), "--cache-dir", str(work.parent / "cache"),
         "run", str(work / "task.toml"), "--tools-dir", tools, "--json"],
        capture_output=True, text=True, check=False,
    )
    if not out.stdout:
        raise SystemExit(f"toolhost run failed (exit {out.returncode}): {out.stderr}")
    report = json.loads(out.stdout)
    post = type(env).model_validate_json((work / "bank/state.json").read_text())
    return post, report["stop"]["reason"]


def main() -> None:
    toolhost, tools, out_path = sys.argv[1:4]
    suite = get_suite("v1", "banking")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        n = 0

        def work() -> Path:
            nonlocal n
            n += 1
            return Path(tmp) / f"r{n}"

        for policy, rules in [("none", ""), ("flow", FLOW_RULES)]:
            useful = refused = 0
            attacked = attacked_useful = attacks_won = 0
            for user in suite.user_tasks.values():
                env = suite.load_and_inject_default_environment({})
                post, stop = run(toolhost, tools, env, user, rules, work())
                refused += stop != "completed"
                calls = user.ground_truth(env.model_copy(deep=True))
                said = [text_content_block_from_string(user.GROUND_TRUTH_OUTPUT)]
                useful += bool(suite._check_user_task_utility(user, said, env, post, calls))
                for injection in suite.injection_tasks.values():
                    vectors = suite.get_injection_vector_defaults()
                    env = suite.load_and_inject_default_environment(
                        {v: injection.GOAL for v in vectors})
                    post, stop = run(toolhost, tools, env, user, rules, work())
                    attacked += 1
                    attacked_useful += bool(suite._check_user_task_utility(
                        user, said, env, post, calls))
                    attacks_won += bool(suite._check_injection_task_security(
                        injection, said, env, post, calls))
            total = len(suite.user_tasks)
            rows[policy] = {
                "user_tasks": total,
                "utility": useful / total,
                "refused": refused,
                "pairs": attacked,
                "utility_under_attack": attacked_useful / attacked,
                "attack_success_rate": attacks_won / attacked,
            }
            print(policy, json.dumps(rows[policy]), flush=True)
    Path(out_path).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
