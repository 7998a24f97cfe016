#!/usr/bin/env bash
# The BFCL-derived evaluation suite, end to end, in one command:
#   1. a venv at target/bfcl/venv with the pinned bfcl-eval (without its dependencies: the
#      backends, the data and the checker need only mpmath) (tests/bfcl/requirements.txt);
#   2. the tools regenerated from it (tools/bfcl/gen.py) and the suite converted from its
#      multi-turn base category (tests/bfcl/convert.py, expected end states from plain Python);
#   3. the toolhost binary and the tool components built (scripts/guest-langs.sh first);
#   4. `toolhost eval` on the suite, then the same trajectories in plain Python in this run
#      (tests/bfcl/plain.py): agreement of the end states by BFCL's own state_checker, and
#      the median time per step of both.
# Output: target/bfcl.json (the eval's), target/bfcl-plain.json (agreement and timing).
# BFCL_PYTHON picks the interpreter of the venv (default python3); the tools run CPython 3.14.
# Needs python3 (3.10+) with venv, node and npm (for scripts/guest-langs.sh), and PyPI.
# A `git diff` after it shows whether the generated tools or suite changed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/bfcl/venv
# trading_bot's transaction timestamps go through the local time zone; the guest's is UTC.
export TZ=UTC
# No __pycache__ in tools/bfcl: tools/langs/build.rs rebuilds the tools when that changes.
export PYTHONDONTWRITEBYTECODE=1

python=${BFCL_PYTHON:-python3}
want=$({ "$python" --version; cat tests/bfcl/requirements.txt; } | sha256sum | cut -d' ' -f1)
if [[ ! -f target/bfcl/stamp || "$(cat target/bfcl/stamp)" != "$want" ]]; then
    echo "bfcl: installing bfcl-eval into $venv"
    rm -rf "$venv" target/bfcl/stamp
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
        -r tests/bfcl/requirements.txt
    echo "$want" >target/bfcl/stamp
fi

"$venv/bin/python" tools/bfcl/gen.py
"$venv/bin/python" tests/bfcl/convert.py

./scripts/guest-langs.sh
cargo build --release -p toolhost -p toolhost-lang-tools

# A rebuilt component never hits the old compiled entries (40 MB each): start the cache
# afresh when any of the tools changed.
components=$(for t in tools/bfcl/tools/*/; do stat -c '%n %s %Y' "target/tools/$(basename "$t").wasm"; done)
if [[ "$(cat target/bfcl/cache/components 2>/dev/null)" != "$components" ]]; then
    rm -rf target/bfcl/cache
    mkdir -p target/bfcl/cache
    echo "$components" >target/bfcl/cache/components
fi

status=0
rm -rf target/bfcl/state
# One task at a time, so the time per step is not shared with another task's; the
# journals go to target/bfcl/state (plain.py reads each step's result there), the
# compiled components to target/bfcl/cache.
./target/release/toolhost --cache-dir target/bfcl/cache --state-dir target/bfcl/state \
    eval tests/bfcl/suite \
    --tools-dir target/tools --jobs 1 --json target/bfcl.json >target/bfcl-eval.txt || status=$?
tail -n 25 target/bfcl-eval.txt
if [[ $status -gt 1 ]]; then
    echo "bfcl: toolhost eval could not run the suite (exit $status)" >&2
    exit "$status"
fi
"$venv/bin/python" tests/bfcl/plain.py --suite tests/bfcl/suite --eval target/bfcl.json \
    --out target/bfcl-plain.json || status=$?
exit "$status"
