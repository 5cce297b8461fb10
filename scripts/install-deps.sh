#!/bin/bash
# Install the Debian packages rdmapool builds and runs with; with --test also
# what its tests need (fio, stress-ng, nftables, PostgreSQL, clang with
# libFuzzer for the fuzz targets, and for the Soft-RoCE VM a kernel image, qemu and busybox). Skips apt when all is there, unless --force.
#   scripts/install-deps.sh [--force] [--test]
set -euo pipefail
force=0
test=0
for a in "$@"; do
	case "$a" in
	--force) force=1 ;;
	--test) test=1 ;;
	*) echo "usage: install-deps.sh [--force] [--test]" >&2; exit 2 ;;
	esac
done

PACKAGES=(
	build-essential autoconf automake libtool pkg-config
	libfuse3-dev fuse3 libjansson-dev
	libibverbs-dev librdmacm-dev rdma-core ibverbs-utils rdmacm-utils
	iproute2 procps psmisc attr rsync
)
[ $test = 1 ] && PACKAGES+=(fio stress-ng xxd gdb util-linux cpio kmod perftest systemd nftables
	postgresql-15 postgresql-client-15
	linux-image-amd64 qemu-system-x86 busybox-static clang libclang-rt-dev)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ $force = 0 ] && [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root (or with sudo)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# fstest 070 runs its own PostgreSQL on a mount: no system cluster wanted
if [ $test = 1 ] && [ ! -e /etc/postgresql-common/createcluster.d/rdmapool-tests.conf ]; then
	mkdir -p /etc/postgresql-common/createcluster.d
	echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/rdmapool-tests.conf
fi
apt-get update -q
apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
