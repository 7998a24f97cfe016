#!/bin/sh
# Builds {{name}}.wasm with componentize-py (pip install -r requirements.txt, in a venv),
# then packs the WIT docs into it, which componentize-py leaves out.
set -eu
cd "$(dirname "$0")"
componentize_py=${COMPONENTIZE_PY:-componentize-py}
command -v "$componentize_py" >/dev/null ||
    { echo "error: componentize-py not found: pip install -r requirements.txt" >&2; exit 1; }
"$componentize_py" -d wit -w {{name}} componentize app -o {{name}}.wasm
"${TOOLHOST:-toolhost}" tool pack {{name}}.wasm --wit wit
