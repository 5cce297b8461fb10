#!/bin/bash
# What free-space accounting costs a mount (issue 17, defect 9): statfs with
# its count a second old (so that it reads again), and the bytes of bitmap
# read while idle, on one pool of SIZE, with the pool's used-block count
# against the same pool with its count's tag cleared (read from the whole
# bitmap, as before the counts) in the same run. Figures only: nothing
# here passes or fails on speed.
#   sudo scripts/bench-statfs.sh [BUILD_DIR]     env: SIZE (4G), CALLS (10), IDLE (10 s)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-_build}
[ -x "$B/src/fuse/rdmapoolfs" ] || B=.
[ -x "$B/src/fuse/rdmapoolfs" ] || { echo "bench-statfs: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench-statfs: run as root" >&2; exit 1; }
SIZE=${SIZE:-4G}
CALLS=${CALLS:-10}
IDLE=${IDLE:-10}
TAG_OFF=65480 # RP_COUNT_TAG_OFFSET
W=$(mktemp -d /tmp/rdmapool-statfs.XXXXXX)
cleanup() {
	mountpoint -q "$W/rp" && fusermount3 -u "$W/rp"
	[ -f "$W/pool0.pid" ] && kill "$(cat "$W/pool0.pid")" 2> /dev/null
	sleep 0.3
	rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$W/rp"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$W/secret"
chmod 600 "$W/secret"
port=$((20000 + RANDOM % 20000))
cat > "$W/cluster.json" <<JSON
{ "version": 1, "name": "statfs", "transport": "tcp", "secret_file": "secret",
  "peers": [ { "id": 0, "host": "127.0.0.1", "port": $port } ] }
JSON
"$B/src/server/rdmapoold" -c "$W/cluster.json" --id 0 --size "$SIZE" \
	--pid-file "$W/pool0.pid" --log-file "$W/pool0.log"
RP="$B/src/tools/rdmapool"
"$RP" mkfs -c "$W/cluster.json" > /dev/null
bitmap_bytes() {
	"$RP" stats --raw "$W/rp" | awk '$1 ~ /^rdmapool_pool_bitmap_read_bytes_total/ { s += $2 } END { printf "%.0f", s }'
}
measure() { # prints: median statfs µs, bitmap bytes per statfs, bitmap bytes per idle minute
	local t=() i t0 t1 b0 b1 b2
	"$B/src/fuse/rdmapoolfs" "$W/cluster.json" "$W/rp" -o log="$W/fs.log"
	dd if=/dev/zero of="$W/rp/f" bs=1M count=64 status=none
	sleep 1.2
	b0=$(bitmap_bytes)
	for i in $(seq 1 "$CALLS"); do
		sleep 1.05 # the count is a second old: this statfs reads again
		t0=$(date +%s%N); stat -f "$W/rp" > /dev/null; t1=$(date +%s%N)
		t+=($(( (t1 - t0) / 1000 )))
	done
	b1=$(bitmap_bytes)
	sleep "$IDLE"
	b2=$(bitmap_bytes)
	rm "$W/rp/f"
	fusermount3 -u "$W/rp"
	sleep 0.3
	printf '%s %s %s\n' "$(printf '%s\n' "${t[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')" \
		$(( (b1 - b0) / CALLS )) $(( (b2 - b1) * 60 / IDLE ))
}
echo "== one $SIZE pool over tcp: statfs with a stale count ($CALLS calls), and $IDLE s idle"
read -r c_us c_b c_idle <<< "$(measure)"
tag=$("$RP" faa -c "$W/cluster.json" --peer 0 --offset $TAG_OFF --add 0 | sed 's/old=//')
"$RP" cas -c "$W/cluster.json" --peer 0 --offset $TAG_OFF --expect "$tag" --swap 0 > /dev/null
read -r b_us b_b b_idle <<< "$(measure)"
printf '%-26s %12s %22s %26s\n' "" "statfs (µs)" "bitmap bytes/statfs" "bitmap bytes/idle minute"
printf '%-26s %12s %22s %26s\n' "used-block count" "$c_us" "$c_b" "$c_idle"
printf '%-26s %12s %22s %26s\n' "whole bitmap (no count)" "$b_us" "$b_b" "$b_idle"
awk -v a="$c_us" -v b="$b_us" 'BEGIN { if (a > 0) printf "statfs: %.1fx faster with the count\n", b / a }'
