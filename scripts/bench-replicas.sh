#!/bin/bash
# The cost of replication: write latency of a volume with two copies of
# every block against one with one copy, on the same three local pools, in
# one run (the two take turns, RUNS rounds, medians with spread). O_DIRECT,
# queue depth 1, so every write reaches the pools: 4 KiB random writes and
# 1 MiB writes; a write's latency is 1/IOPS. Figures only; nothing passes or
# fails on speed.
#   sudo scripts/bench-replicas.sh [BUILD_DIR]   (default _build, else the source tree)
#   env: RUNS (3), SECONDS_PER (6), TRANSPORT (auto)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-_build}
[ -x "$B/src/fuse/rdmapoolfs" ] || B=.
[ -x "$B/src/fuse/rdmapoolfs" ] || { echo "bench-replicas: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench-replicas: run as root" >&2; exit 1; }
command -v fio > /dev/null || { echo "bench-replicas: needs fio (apt-get install fio)" >&2; exit 1; }
RUNS=${RUNS:-3}
SECS=${SECONDS_PER:-6}
W=$(mktemp -d /tmp/rdmapool-bench-rep.XXXXXX)

cleanup() {
	for m in "$W/r1" "$W/r2"; do mountpoint -q "$m" && fusermount3 -u "$m"; done
	sleep 0.5
	for p in "$W"/pool*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2> /dev/null; done
	sleep 0.5
	rm -rf "$W"
}
trap cleanup EXIT

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$W/secret"
chmod 600 "$W/secret"
cat > "$W/cluster.json" <<JSON
{ "version": 1, "name": "benchrep", "transport": "${TRANSPORT:-auto}", "secret_file": "secret",
  "peers": [ { "id": 0, "host": "127.0.0.1", "port": 17491 }, { "id": 1, "host": "127.0.0.1", "port": 17492 },
             { "id": 2, "host": "127.0.0.1", "port": 17493 } ] }
JSON
for id in 0 1 2; do
	"$B/src/server/rdmapoold" -c "$W/cluster.json" --id $id --size 1536M \
		--pid-file "$W/pool$id.pid" --log-file "$W/pool$id.log"
done
mkdir -p "$W/r1" "$W/r2"
"$B/src/tools/rdmapool" mkfs -c "$W/cluster.json" --volume r1 > /dev/null
"$B/src/tools/rdmapool" mkfs -c "$W/cluster.json" --volume r2 --replicas 2 > /dev/null
"$B/src/fuse/rdmapoolfs" "$W/cluster.json" "$W/r1" -o volume=r1,log="$W/fs1.log"
"$B/src/fuse/rdmapoolfs" "$W/cluster.json" "$W/r2" -o volume=r2,log="$W/fs2.log"
echo "== machine: $(nproc) cpus, $(uname -r), $(date -u +%F); 3 pools, transport ${TRANSPORT:-auto}"

# fio's terse output: field 49 is write IOPS
lat_us() { # DIR fio-args... -> mean latency of one write (us)
	local d=$1
	shift
	fio --name=b --directory="$d" --minimal --direct=1 --time_based --runtime="$SECS" "$@" \
		2> /dev/null | awk -F';' '{ if ($49 > 0) printf "%.1f", 1e6 / $49 }'
}
declare -A R
for run in $(seq 1 "$RUNS"); do
	for v in r1 r2; do
		R["4k $v"]+=" $(lat_us "$W/$v" --rw=randwrite --bs=4k --size=128M --filename=f4k)"
		R["1m $v"]+=" $(lat_us "$W/$v" --rw=write --bs=1M --size=512M --filename=f1m)"
	done
done
med() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { tr ' ' '\n' | grep . | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
printf "%-28s %14s %14s %8s\n" "write latency (us, median)" "replicas 1" "replicas 2" "ratio"
for w in 4k 1m; do
	a=$(echo "${R[$w r1]}" | med) b=$(echo "${R[$w r2]}" | med)
	printf "%-28s %14s %14s %8s\n" "$w O_DIRECT, QD1" "$a ($(echo "${R[$w r1]}" | spread))" \
		"$b ($(echo "${R[$w r2]}" | spread))" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')"
done
echo "(target: replicas 2 at most 1.3x replicas 1)"
