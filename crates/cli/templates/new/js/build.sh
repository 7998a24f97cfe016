#!/bin/sh
# Builds {{name}}.wasm with componentize-js (npm install), then packs the WIT docs into it,
# which componentize-js leaves out.
set -eu
cd "$(dirname "$0")"
[ -d node_modules ] || npm install --no-audit --no-fund
node componentize.mjs {{name}}.js wit {{name}} {{name}}.wasm
"${TOOLHOST:-toolhost}" tool pack {{name}}.wasm --wit wit
