#!/usr/bin/env bash
# The LangGraph comparison (not in CI): makes a venv with LangGraph and its SQLite
# checkpointer under target/langgraph-venv (once), builds the bench, and runs
# bench/langgraph/compare.py with it. Extra arguments go to compare.py (--sizes, --wide).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/langgraph-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import langgraph.checkpoint.sqlite' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q langgraph langgraph-checkpoint-sqlite
fi
cargo build --release -p toolhost-bench
exec "$venv/bin/python" bench/langgraph/compare.py target/release/bench "$@"
