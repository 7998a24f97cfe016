#!/usr/bin/env bash
# Installs @copilotkit/aimock, the independent mock model server (OpenAI Chat Completions,
# OpenAI Responses, Anthropic Messages) that the LLM example tasks run against in
# tests/all/llm/aimock.rs, under target/aimock/ (never system-wide), pinned by
# tests/aimock/package*.json. Idempotent: a stamp records what was installed, and a rerun
# with the same pins and Node does nothing. Node and npm come from scripts/node.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(./scripts/node.sh):$PATH"
export PATH
dir="${TOOLHOST_AIMOCK_DIR:-$PWD/target/aimock}"
for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "error: \`$tool\` is not installed; the mock model server (tests/aimock) needs Node" >&2
        exit 1
    fi
done
want=$({ node --version; cat tests/aimock/package.json tests/aimock/package-lock.json; } | sha256sum | cut -d' ' -f1)
if [[ -f "$dir/stamp" && "$(cat "$dir/stamp")" == "$want" ]]; then
    echo "aimock: up to date in $dir"
    exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
cp tests/aimock/package.json tests/aimock/package-lock.json "$dir/"
(cd "$dir" && npm ci --silent --no-audit --no-fund)
echo "$want" >"$dir/stamp"
echo "aimock: installed $(node -p "require('$dir/node_modules/@copilotkit/aimock/package.json').version") in $dir"
