#!/bin/bash
# Install the Debian packages rdmapool builds, tests and runs with.
# Skips apt when everything is already there, unless --force.
set -euo pipefail

PACKAGES=(
	build-essential autoconf automake libtool pkg-config
	libfuse3-dev fuse3 libjansson-dev
	libibverbs-dev librdmacm-dev rdma-core ibverbs-utils rdmacm-utils
	iproute2 procps psmisc attr rsync fio stress-ng xxd
)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${1:-}" != "--force" ] && [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root (or with sudo)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
