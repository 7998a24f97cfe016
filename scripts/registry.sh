#!/usr/bin/env bash
# Installs the OCI registry the registry tests start (tests/all/oci.rs): Debian's
# `docker-registry` (CNCF distribution 2.8), unpacked inside the checkout under
# target/registry/ (never system-wide, no root needed: scripts/apt-unpack.sh), and prints
# the binary's path. Idempotent. Needs apt-get and dpkg-deb (Debian, Ubuntu).
set -euo pipefail
cd "$(dirname "$0")/.."
exec ./scripts/apt-unpack.sh "${TOOLHOST_REGISTRY_DIR:-$PWD/target/registry}" \
    docker-registry usr/bin/docker-registry
