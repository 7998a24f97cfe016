#!/usr/bin/env bash
# `apt-unpack.sh DIR PACKAGE BIN`: Debian's PACKAGE unpacked under DIR/root (never
# system-wide, no root needed: `apt-get download` and `dpkg-deb -x`); prints the path of its
# binary DIR/root/BIN after checking it runs (`--version`). Idempotent: a stamp records the
# package version, and a rerun that finds it does nothing. Needs apt-get and dpkg-deb
# (Debian, Ubuntu). Used by registry.sh and bwrap.sh.
set -euo pipefail
if [ "$#" -ne 3 ]; then
    echo "usage: $0 DIR PACKAGE BIN (BIN relative to the unpacked root, e.g. usr/bin/bwrap)" >&2
    exit 2
fi
dir="$1"
package="$2"
bin="$dir/root/$3"
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
