#!/usr/bin/env bash
# Installs bubblewrap (`bwrap`), the sandbox Flatpak uses, from Debian's archive inside the
# checkout under target/bwrap/ (never system-wide, no root needed: scripts/apt-unpack.sh),
# and prints the binary's path. The benchmark's one-shot figure measures a `toolhost tool
# call` against an empty `bwrap` sandbox around `/bin/true`: the cheapest sandboxed process
# a caller could start instead. Idempotent. Needs apt-get and dpkg-deb (Debian, Ubuntu).
set -euo pipefail
cd "$(dirname "$0")/.."
exec ./scripts/apt-unpack.sh "${TOOLHOST_BWRAP_DIR:-$PWD/target/bwrap}" bubblewrap usr/bin/bwrap
