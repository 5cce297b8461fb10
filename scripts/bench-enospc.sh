#!/bin/bash
# How fast a full volume says ENOSPC, against tmpfs in the same run (issue
# 17, defect 9): both are filled to the brim, then ATTEMPTS new 4 KiB files
# are tried on each, in turns, RUNS times. Figures only: nothing here passes
# or fails on speed.
#   sudo scripts/bench-enospc.sh [BUILD_DIR]     env: ATTEMPTS (300), RUNS (3)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-_build}
[ -x "$B/src/fuse/rdmapoolfs" ] || B=.
[ -x "$B/src/fuse/rdmapoolfs" ] || { echo "bench-enospc: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench-enospc: run as root" >&2; exit 1; }
N=${ATTEMPTS:-300}
RUNS=${RUNS:-3}
W=$(mktemp -d /tmp/rdmapool-enospc.XXXXXX)
cleanup() {
	mountpoint -q "$W/rp" && fusermount3 -u "$W/rp"
	mountpoint -q "$W/tmp" && umount "$W/tmp"
	[ -f "$W/pool0.pid" ] && kill "$(cat "$W/pool0.pid")" 2> /dev/null
	sleep 0.3
	rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$W/rp" "$W/tmp"
mount -t tmpfs -o size=64m tmpfs "$W/tmp"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$W/secret"
chmod 600 "$W/secret"
port=$((20000 + RANDOM % 20000))
cat > "$W/cluster.json" <<JSON
{ "version": 1, "name": "enospc", "transport": "tcp", "secret_file": "secret",
  "peers": [ { "id": 0, "host": "127.0.0.1", "port": $port } ] }
JSON
"$B/src/server/rdmapoold" -c "$W/cluster.json" --id 0 --size 64M \
	--pid-file "$W/pool0.pid" --log-file "$W/pool0.log"
"$B/src/tools/rdmapool" mkfs -c "$W/cluster.json" > /dev/null
"$B/src/fuse/rdmapoolfs" "$W/cluster.json" "$W/rp" -o log="$W/fs.log"

for d in "$W/rp" "$W/tmp"; do
	dd if=/dev/zero of="$d/fill" bs=1M status=none 2> /dev/null || true
	for i in $(seq 1 64); do head -c 4096 /dev/zero > "$d/small$i" 2> /dev/null || break; done
done
attempts() { # DIR RUN: seconds for N failing new files
	local t0 t1 i
	t0=$(date +%s.%N)
	# printf is a builtin: no process start in the figure
	for i in $(seq 1 "$N"); do printf '%4096s' x 2> /dev/null > "$1/r$2.$i" || true; done
	t1=$(date +%s.%N)
	rm -f "$1"/r"$2".*
	echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }'
}
echo "== $N new 4 KiB files on a full volume, $RUNS runs (seconds per run)"
rp=() tm=()
for r in $(seq 1 "$RUNS"); do
	rp+=("$(attempts "$W/rp" "$r")")
	tm+=("$(attempts "$W/tmp" "$r")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
mr=$(median "${rp[@]}") mt=$(median "${tm[@]}")
printf 'rdmapool: %s s (runs: %s)\n' "$mr" "${rp[*]}"
printf 'tmpfs:    %s s (runs: %s)\n' "$mt" "${tm[*]}"
awk -v a="$mr" -v b="$mt" -v n="$N" 'BEGIN { printf "per ENOSPC: rdmapool %.2f ms, tmpfs %.2f ms, ratio %.1f\n", 1000 * a / n, 1000 * b / n, a / b }'
