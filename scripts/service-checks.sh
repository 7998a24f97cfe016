#!/usr/bin/env bash
# Installs the independent checkers of `toolhost serve` and of deploy/ inside the checkout,
# under target/service-checks/venv (never system-wide), pinned by
# tests/service/requirements.txt:
#   schemathesis         the API against its own OpenAPI document (tests/all/openapi.rs)
#   kubernetes-validate  deploy/k8s/ against the Kubernetes schemas, offline
#                        (tests/all/deploy.rs)
# Idempotent: a stamp records what was installed, and a rerun with the same pins and
# Python does nothing. Needs python3 (3.10+) with venv and pip.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${TOOLHOST_SERVICE_CHECKS_DIR:-$PWD/target/service-checks}"
if ! command -v python3 >/dev/null 2>&1; then
    echo "error: \`python3\` is not installed; the service checks (schemathesis, kubernetes-validate) need Python 3.10+" >&2
    exit 1
fi
want=$({ python3 --version; cat tests/service/requirements.txt; } | sha256sum | cut -d' ' -f1)
if [[ -f "$dir/stamp" && "$(cat "$dir/stamp")" == "$want" ]]; then
    echo "service-checks: up to date in $dir"
    exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
python3 -m venv "$dir/venv"
"$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r tests/service/requirements.txt
# The entry points the tests run; a pin that drops one fails here rather than in a test.
"$dir/venv/bin/schemathesis" --version
"$dir/venv/bin/kubernetes-validate" --version
echo "$want" >"$dir/stamp"
echo "service-checks: installed in $dir"
