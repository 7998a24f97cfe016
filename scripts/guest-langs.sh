#!/usr/bin/env bash
# Installs the pinned Python and JavaScript component toolchains inside the checkout, under
# target/guest-langs/ (never system-wide), for the tools in tools/py and tools/js and for
# `toolhost new --lang python|js` tests:
#   target/guest-langs/venv   a Python venv with componentize-py (tools/py/requirements.txt)
#   target/guest-langs/node   an npm project with componentize-js (tools/js/package*.json)
# Idempotent: a stamp records what was installed, and a rerun with the same pins, Python
# and Node does nothing. Needs python3 (3.10+) with venv and pip, and node (18+) with npm.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir="${TOOLHOST_GUEST_LANGS_DIR:-$root/target/guest-langs}"

need() {
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "error: \`$1\` is not installed; it is needed to build the $2 tools (tools/$3)" >&2
        exit 1
    fi
}
need python3 Python py
need node JavaScript js
need npm JavaScript js

stamp_of() {
    {
        python3 --version
        node --version
        cat tools/py/requirements.txt tools/js/package.json tools/js/package-lock.json
    } | sha256sum | cut -d' ' -f1
}
want=$(stamp_of)
if [[ -f "$dir/stamp" && "$(cat "$dir/stamp")" == "$want" ]]; then
    echo "guest-langs: toolchains up to date in $dir"
    exit 0
fi

mkdir -p "$dir"
rm -f "$dir/stamp"
echo "guest-langs: installing componentize-py into $dir/venv"
rm -rf "$dir/venv"
python3 -m venv "$dir/venv"
"$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check -r tools/py/requirements.txt

echo "guest-langs: installing componentize-js into $dir/node"
rm -rf "$dir/node"
mkdir -p "$dir/node"
cp tools/js/package.json tools/js/package-lock.json "$dir/node/"
# `npm ci` rejects this lock file (npm leaves other platforms' optional binaries out of it),
# so install from it with `npm install`, which keeps the locked versions.
(cd "$dir/node" && npm install --no-audit --no-fund --loglevel=error)

echo "$want" >"$dir/stamp"
echo "guest-langs: done"
