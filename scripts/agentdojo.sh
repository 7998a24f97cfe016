#!/usr/bin/env bash
# AgentDojo's banking suite through toolhost, in one command (SECURITY.md, "Measurement"):
#   1. a venv at target/agentdojo/venv with agentdojo==0.1.35 from PyPI;
#   2. the toolhost binary and the tool components (tools/bank among them) built;
#   3. bench/agentdojo/banking.py: every user task's ground truth as a scripted plan, with no
#      attack and with each injection task's goal at every injection vector, under no
#      data-flow rules and under SECURITY.md's, scored by AgentDojo's own checks.
# Output: target/agentdojo-banking.json. Needs python3 (3.10+) with venv, and PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
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
cargo build --release -p toolhost -p toolhost-tools
"$venv/bin/python" bench/agentdojo/banking.py target/release/toolhost target/tools \
    target/agentdojo-banking.json
