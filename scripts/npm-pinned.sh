#!/usr/bin/env bash
# Installs the npm packages pinned by SRC/package.json and SRC/package-lock.json into DIR
# (`npm ci`, never system-wide), with the Node of scripts/node.sh, for the test command's
# JavaScript suites: scripts/aimock.sh, scripts/console-browser.sh.
#   scripts/npm-pinned.sh NAME SRC DIR
# Idempotent: a stamp records what was installed, and a rerun with the same pins and Node
# does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
name="$1" src="$2" dir="$3"
PATH="$(./scripts/node.sh):$PATH"
export PATH
for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "error: \`$tool\` is not installed; $name ($src) needs Node" >&2
        exit 1
    fi
done
want=$({ node --version; cat "$src/package.json" "$src/package-lock.json"; } | sha256sum | cut -d' ' -f1)
if [[ -f "$dir/stamp" && "$(cat "$dir/stamp")" == "$want" ]]; then
    echo "$name: up to date in $dir"
    exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
(cd "$dir" && npm ci --silent --no-audit --no-fund)
echo "$want" >"$dir/stamp"
echo "$name: installed in $dir"
