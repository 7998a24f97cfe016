#!/usr/bin/env bash
# AgentDojo's suites through toolhost, in one command (SECURITY.md, "Measurement"):
#   scripts/agentdojo.sh [banking|slack|workspace|travel|all] [--gate] [--pairs N] [--user-tasks IDS]
#                        [--modes M,..] [--planners P,..] [--defences D,..] [--max-input-tokens N]
#                        [--planner KIND --model NAME --base-url URL --api-key-env VAR]
#   scripts/agentdojo.sh install    (the venv only: scripts/test.sh, before the tests)
#   1. a venv at target/agentdojo/venv with agentdojo==0.1.35 from PyPI;
#   2. the toolhost binary and the tool components (tools/bank, tools/slack, tools/workspace,
#      tools/booking for travel) built;
#   3. bench/agentdojo/harness.py: every user task alone and with each injection task's
#      attack, for the scripted and the adversarial planner (or, with --planner, a live
#      model), plan-then-execute and step-wise, in each defence mode, run by `toolhost eval`
#      and scored by AgentDojo's own checks.
# Output: target/agentdojo/agentdojo-SUITE.json (one row per planner, mode and defence).
# --gate: only the adversarial planner in the defended mode; exit 1 on any successful attack
# (scripts/test.sh runs it on banking). Needs python3 (3.10+) with venv, and PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
case "$which" in
    banking | slack | workspace | travel) suites=("$which") ;;
    all) suites=(banking slack workspace travel) ;;
    install) suites=() ;;
    *) echo "usage: scripts/agentdojo.sh [banking|slack|workspace|travel|all|install] [--gate] [--pairs N] ..." >&2; exit 2 ;;
esac
shift || true
venv=target/agentdojo/venv
python=${AGENTDOJO_PYTHON:-python3}
want=$({ "$python" --version; echo agentdojo==0.1.35; } | sha256sum | cut -d' ' -f1)
if [[ ! -f target/agentdojo/stamp || "$(cat target/agentdojo/stamp)" != "$want" ]]; then
    echo "agentdojo: installing agentdojo==0.1.35 into $venv"
    rm -rf "$venv" target/agentdojo/stamp
    mkdir -p target/agentdojo
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check agentdojo==0.1.35
    echo "$want" >target/agentdojo/stamp
fi
[[ ${#suites[@]} -gt 0 ]] || exit 0
cargo build --release -p toolhost -p toolhost-tools
"$venv/bin/python" bench/agentdojo/harness.py target/release/toolhost target/tools \
    target/agentdojo "${suites[@]}" "$@"
