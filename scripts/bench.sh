#!/bin/bash
# Benchmarks: rdmapool against tmpfs, measured in the same run on this
# machine. Figures only; nothing here passes or fails on speed.
#   sudo scripts/bench.sh [BUILD_DIR]      (default _build, else the source tree)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-_build}
[ -x "$B/src/fuse/rdmapoolfs" ] || B=.
[ -x "$B/src/fuse/rdmapoolfs" ] || { echo "bench: build first (scripts/run-tests.sh or make)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
SIZE_MB=${SIZE_MB:-1024}
FILES=${FILES:-10000}
W=$(mktemp -d /tmp/rdmapool-bench.XXXXXX)
MNT=$W/mnt
TMPFS=$W/tmpfs
cleanup() {
	mountpoint -q "$MNT" && fusermount3 -u "$MNT"
	mountpoint -q "$TMPFS" && umount "$TMPFS"
	for p in "$W"/pool*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done
	sleep 0.5
	rm -rf "$W"
}
trap cleanup EXIT
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$W/secret"
cat > "$W/cluster.json" <<JSON
{ "version": 1, "name": "bench", "transport": "${TRANSPORT:-auto}", "secret_file": "secret",
  "peers": [ { "id": 0, "host": "127.0.0.1", "port": 17481 }, { "id": 1, "host": "127.0.0.1", "port": 17482 } ] }
JSON
for id in 0 1; do
	"$B/src/server/rdmapoold" -c "$W/cluster.json" --id $id --size "$((SIZE_MB + 512))M" \
		--pid-file "$W/pool$id.pid" --log-file "$W/pool$id.log"
done
"$B/src/tools/rdmapool" mkfs -c "$W/cluster.json" > /dev/null
mkdir -p "$MNT" "$TMPFS"
"$B/src/fuse/rdmapoolfs" "$W/cluster.json" "$MNT" -o log="$W/fs.log"
mount -t tmpfs -o size=$((SIZE_MB * 2 + 512))m tmpfs "$TMPFS"

echo "== machine: $(nproc) cpus, $(free -g | awk '/Mem:/ { print $2 }') GiB, $(uname -r)"
echo "== transport (rdmapool bench, one client, per pool)"
"$B/src/tools/rdmapool" bench -c "$W/cluster.json" --seconds 4

mbps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.0f", b / 1048576 / s }'; }
timeit() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }'; }

head -c "${SIZE_MB}M" /dev/urandom > "$TMPFS/src"
bytes=$((SIZE_MB * 1048576))
printf '\n== %-34s %12s %12s %8s\n' "workload" "rdmapool" "tmpfs" "ratio"
declare -A res
for target in rdmapool tmpfs; do
	d=$MNT; [ $target = tmpfs ] && d=$TMPFS
	res[$target.write]=$(mbps $bytes "$(timeit dd if="$TMPFS/src" of="$d/big" bs=1M conv=fsync)")
	echo 3 > /proc/sys/vm/drop_caches
	res[$target.read]=$(mbps $bytes "$(timeit dd if="$d/big" of=/dev/null bs=1M)")
	res[$target.write4k]=$(mbps $((64 * 1048576)) "$(timeit dd if="$TMPFS/src" of="$d/small" bs=4k count=16384 conv=fsync)")
	mkdir -p "$d/many"
	t=$(timeit bash -c "cd '$d/many' && head -c $((FILES * 4096)) '$TMPFS/src' | split -b 4096 -a 5 - f")
	res[$target.create]=$(awk -v n="$FILES" -v t="$t" 'BEGIN { printf "%.0f", n / t }')
	t=$(timeit rm -rf "$d/many")
	res[$target.unlink]=$(awk -v n="$FILES" -v t="$t" 'BEGIN { printf "%.0f", n / t }')
	rm -f "$d/big" "$d/small"
done
for k in "write:sequential write 1 MiB blocks (MB/s)" "read:sequential read, cold cache (MB/s)" \
	 "write4k:write 4 KiB blocks + fsync (MB/s)" "create:create 4 KiB files (files/s)" \
	 "unlink:delete files (files/s)"; do
	key=${k%%:*}; label=${k#*:}
	printf '   %-34s %12s %12s %8s\n' "$label" "${res[rdmapool.$key]}" "${res[tmpfs.$key]}" \
		"$(ratio "${res[rdmapool.$key]}" "${res[tmpfs.$key]}")"
done
pid=$(pgrep -f "rdmapoolfs $W/cluster.json" | head -1)
echo
echo "== memory: rdmapoolfs RSS $(ps -o rss= -p "$pid" | awk '{ printf "%.1f MiB", $1 / 1024 }') after the run;" \
	"pool servers $(for p in "$W"/pool*.pid; do ps -o rss= -p "$(cat "$p")"; done | awk '{ s += $1 } END { printf "%.0f MiB", s / 1024 }') (their regions, touched)"
