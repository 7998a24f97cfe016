#!/usr/bin/env bash
# Installs bubblewrap (`bwrap`), the sandbox Flatpak uses, from Debian's archive inside the
# checkout under target/bwrap/ (never system-wide, no root needed: `apt-get download` and
# `dpkg-deb -x`), and prints the binary's path. The benchmark's one-shot figure measures a
# `toolhost tool call` against an empty `bwrap` sandbox around `/bin/true`: the cheapest
# sandboxed process a caller could start instead. Idempotent: a stamp records the package,
# and a rerun that finds it does nothing. Needs apt-get and dpkg-deb (Debian, Ubuntu).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${TOOLHOST_BWRAP_DIR:-$PWD/target/bwrap}"
package="bubblewrap"
bin="$dir/root/usr/bin/bwrap"
if [[ -f "$dir/stamp" && -x "$bin" ]]; then
    echo "$bin"
    exit 0
fi
for tool in apt-get dpkg-deb; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "error: \`$tool\` is not installed; it installs Debian's $package under $dir" >&2
        exit 1
    fi
done
rm -rf "$dir"
mkdir -p "$dir/download"
# `apt-get download` fetches into the current directory, as the calling user.
if ! (cd "$dir/download" && apt-get download "$package" >&2); then
    echo "error: \`apt-get download $package\` failed: run \`apt-get update\` (as root) and retry" >&2
    exit 1
fi
deb=$(ls "$dir"/download/"$package"_*.deb)
dpkg-deb -x "$deb" "$dir/root"
"$bin" --version >&2
basename "$deb" >"$dir/stamp"
echo "$bin"
