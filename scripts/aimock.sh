#!/usr/bin/env bash
# Installs @copilotkit/aimock, the independent mock model server (OpenAI Chat Completions,
# OpenAI Responses, Anthropic Messages) that the LLM example tasks run against in
# tests/all/llm/aimock.rs, under target/aimock/ (never system-wide), pinned by
# tests/aimock/package*.json. Idempotent: a stamp records what was installed, and a rerun
# with the same pins and Node does nothing. Node and npm come from scripts/node.sh
# (scripts/npm-pinned.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${TOOLHOST_AIMOCK_DIR:-$PWD/target/aimock}"
./scripts/npm-pinned.sh aimock tests/aimock "$dir"
PATH="$(./scripts/node.sh):$PATH"
echo "aimock $(node -p "require('$dir/node_modules/@copilotkit/aimock/package.json').version") in $dir"
