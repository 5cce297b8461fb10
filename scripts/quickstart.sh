#!/bin/bash
# rdmapool quick start: build, start two local pool servers, make a volume,
# mount it and use it; "down" stops it all again.
#   sudo scripts/quickstart.sh [up] [MOUNTPOINT]   (default /mnt/rdmapool)
#   sudo scripts/quickstart.sh down [--purge]      (--purge also deletes the pools' files)
#   sudo scripts/quickstart.sh status
# With --installed first, it uses the programs the Debian package installed
# (/usr/sbin, /usr/bin) instead of building: sudo scripts/quickstart.sh --installed up
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
STATE=${RDMAPOOL_STATE:-/var/tmp/rdmapool-quickstart}
MNT_FILE="$STATE/mountpoint"
BUILD="$top/_build"
RDMAPOOLD="$BUILD/src/server/rdmapoold"
RDMAPOOL="$BUILD/src/tools/rdmapool"
RDMAPOOLFS="$BUILD/src/fuse/rdmapoolfs"
INSTALLED=0
if [ "${1:-}" = --installed ]; then
	INSTALLED=1
	shift
	RDMAPOOLD=/usr/sbin/rdmapoold
	RDMAPOOL=/usr/bin/rdmapool
	RDMAPOOLFS=/usr/sbin/rdmapoolfs
fi

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

need_root() {
	[ "$(id -u)" = 0 ] || { echo "quickstart: run as root (it installs packages and mounts)" >&2; exit 1; }
}

build() {
	if [ $INSTALLED = 1 ]; then
		for p in "$RDMAPOOLD" "$RDMAPOOL" "$RDMAPOOLFS"; do
			[ -x "$p" ] || { echo "quickstart: $p is missing: install the rdmapool package" >&2; exit 1; }
		done
		return 0
	fi
	scripts/install-deps.sh
	if [ ! -x "$RDMAPOOLFS" ] || [ -n "$(find src include -newer "$RDMAPOOLFS" -name '*.[ch]' | head -1)" ]; then
		say "building"
		[ -x configure ] || ./autogen.sh > /dev/null
		mkdir -p "$BUILD"
		(cd "$BUILD" && { [ -f Makefile ] || ../configure > configure.log; } && make -j"$(nproc)" > make.log) ||
			{ echo "build failed: see $BUILD/make.log" >&2; exit 1; }
	fi
}

up() {
	local mnt=${1:-/mnt/rdmapool}
	need_root
	build
	mkdir -p "$STATE"
	if [ ! -f "$STATE/cluster.json" ]; then
		head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$STATE/secret"
		chmod 600 "$STATE/secret"
		cat > "$STATE/cluster.json" <<JSON
{
  "version": 1,
  "name": "quickstart",
  "transport": "auto",
  "secret_file": "secret",
  "block_size": 4096,
  "peers": [
    { "id": 0, "host": "127.0.0.1", "port": 7471 },
    { "id": 1, "host": "127.0.0.1", "port": 7472 }
  ]
}
JSON
	fi
	say "starting two pool servers (512 MiB each, kept in $STATE)"
	for id in 0 1; do
		if [ -f "$STATE/pool$id.pid" ] && kill -0 "$(cat "$STATE/pool$id.pid")" 2>/dev/null; then
			echo "pool $id already running"
		else
			run "$RDMAPOOLD" -c "$STATE/cluster.json" --id $id --size 512M \
				--backing-file "$STATE/pool$id.img" --pid-file "$STATE/pool$id.pid" \
				--log-file "$STATE/pool$id.log"
		fi
	done
	run "$RDMAPOOL" status -c "$STATE/cluster.json"
	say "making the volume"
	if ! out=$("$RDMAPOOL" mkfs -c "$STATE/cluster.json" --volume default 2>&1); then
		echo "$out" | grep -q "already exists" || { echo "$out" >&2; exit 1; }
		out="volume \"default\" exists already: keeping its files"
	fi
	echo "$out"
	say "mounting at $mnt"
	mkdir -p "$mnt"
	if mountpoint -q "$mnt"; then
		echo "$mnt is already mounted"
	else
		run "$RDMAPOOLFS" "$STATE/cluster.json" "$mnt" -o volume=default,allow_other,log="$STATE/rdmapoolfs.log"
	fi
	echo "$mnt" > "$MNT_FILE"
	say "using it"
	run cp /etc/os-release "$mnt/os-release"
	run cat "$mnt/os-release"
	run dd if=/dev/urandom of="$STATE/sample" bs=1M count=64 status=none
	run dd if="$STATE/sample" of="$mnt/sample" bs=1M status=progress
	run cmp "$STATE/sample" "$mnt/sample"
	echo "64 MiB copied in and compared byte for byte"
	run mkdir -p "$mnt/dir/sub"
	run ls -la "$mnt"
	run df -h "$mnt"
	say "done: the filesystem is at $mnt; stop it with: $0 down"
}

down() {
	need_root
	local mnt
	mnt=$(cat "$MNT_FILE" 2>/dev/null || echo /mnt/rdmapool)
	if mountpoint -q "$mnt"; then
		say "unmounting $mnt"
		run fusermount3 -u "$mnt" || run umount -l "$mnt"
		sleep 1
	fi
	for id in 0 1; do
		if [ -f "$STATE/pool$id.pid" ]; then
			say "stopping pool $id"
			kill "$(cat "$STATE/pool$id.pid")" 2>/dev/null || true
			for _ in $(seq 1 50); do [ -f "$STATE/pool$id.pid" ] || break; sleep 0.1; done
		fi
	done
	if [ "${1:-}" = "--purge" ]; then
		say "deleting $STATE"
		rm -rf "$STATE"
	else
		echo "pool contents are kept in $STATE (down --purge deletes them); 'up' brings them back"
	fi
}

case "${1:-up}" in
	up) shift || true; up "$@" ;;
	down) shift; down "$@" ;;
	status) "$RDMAPOOL" status -c "$STATE/cluster.json" ;;
	/*) up "$1" ;;
	*) sed -n '2,6p' "$0"; exit 2 ;;
esac
