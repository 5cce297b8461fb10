#!/bin/bash
# Benchmarks: rdmapool against the FUSE ceiling (libfuse's passthrough_ll
# example over a tmpfs), against tmpfs itself, and against the wire (qperf
# on loopback), all in one run on this machine. The targets take turns for
# every workload (A B C A B C ...), and each figure is the median of RUNS with
# its spread (min-max): these machines are noisy. Figures only; nothing here
# passes or fails on speed.
#   sudo scripts/bench.sh [BUILD_DIR]      (default _build, else the source tree)
#   env: SIZE_MB (1024), RUNS (2), SECONDS_PER (8: time-based jobs),
#        FILES (10000: metadata ops and ls -lR; passthrough_ll holds an fd
#        per inode, so more needs RLIMIT_NOFILE above FILES), TRANSPORT (auto)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-_build}
[ -x "$B/src/fuse/rdmapoolfs" ] || B=.
[ -x "$B/src/fuse/rdmapoolfs" ] || { echo "bench: build first (scripts/run-tests.sh or make)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
command -v fio > /dev/null || { echo "bench: needs fio (apt-get install fio)" >&2; exit 1; }
SIZE_MB=${SIZE_MB:-1024}
RUNS=${RUNS:-2}
SECS=${SECONDS_PER:-8}
FILES=${FILES:-10000}
PT_SRC=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c
W=$(mktemp -d /tmp/rdmapool-bench.XXXXXX)
TMPFS=$W/tmpfs           # tmpfs itself, and the passthrough's backing store
declare -A DIR=([rdmapool]=$W/rp [passthrough]=$W/pt [tmpfs]=$TMPFS/direct)
TARGETS="rdmapool passthrough tmpfs"

cleanup() {
	for m in "$W/rp" "$W/pt"; do mountpoint -q "$m" && fusermount3 -u "$m"; done
	pkill -f "^$W/qperf" 2> /dev/null || true
	mountpoint -q "$TMPFS" && umount "$TMPFS"
	for p in "$W"/pool*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2> /dev/null; done
	sleep 0.5
	rm -rf "$W"
}
trap cleanup EXIT

# ---- the three targets ----
mkdir -p "$W/rp" "$W/pt" "$TMPFS"
mount -t tmpfs -o size=$((SIZE_MB * 3 + 1024))m tmpfs "$TMPFS"
mkdir -p "$TMPFS/direct" "$TMPFS/ptsrc"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$W/secret"
chmod 600 "$W/secret"
cat > "$W/cluster.json" <<JSON
{ "version": 1, "name": "bench", "transport": "${TRANSPORT:-auto}", "secret_file": "secret",
  "peers": [ { "id": 0, "host": "127.0.0.1", "port": 17481 }, { "id": 1, "host": "127.0.0.1", "port": 17482 } ] }
JSON
for id in 0 1; do
	"$B/src/server/rdmapoold" -c "$W/cluster.json" --id $id --size "$((SIZE_MB + 1024))M" \
		--pid-file "$W/pool$id.pid" --log-file "$W/pool$id.log"
done
"$B/src/tools/rdmapool" mkfs -c "$W/cluster.json" > /dev/null
"$B/src/fuse/rdmapoolfs" "$W/cluster.json" "$W/rp" -o log="$W/fs.log"
if [ -f "$PT_SRC" ] && gcc -O2 -o "$W/passthrough_ll" "$PT_SRC" $(pkg-config --cflags --libs fuse3) 2> "$W/pt.log"; then
	# it holds an fd for every inode it has looked up
	# with xattrs, as rdmapool has them: without, the kernel stops asking
	# after the first ENOSYS, and ls -l or cp would skip two requests a file
	(ulimit -n "$(ulimit -Hn)"; exec "$W/passthrough_ll" -o source="$TMPFS/ptsrc" -o xattr "$W/pt")
else
	echo "bench: cannot build $PT_SRC (libfuse3-dev): no FUSE ceiling column" >&2
	TARGETS="rdmapool tmpfs"
fi

echo "== machine: $(nproc) cpus, $(free -g | awk '/Mem:/ { print $2 }') GiB, $(uname -r), $(date -u +%F)"
echo "== wire"
wire_rtt=0
if command -v qperf > /dev/null; then
	cp "$(command -v qperf)" "$W/qperf" && { "$W/qperf" > /dev/null 2>&1 & disown; }
	sleep 0.5
	qperf 127.0.0.1 -t 4 tcp_bw 2>&1 | sed 's/^/   /'
	# qperf's latency is one way; a 4 KiB read is a round trip
	qperf 127.0.0.1 -t 4 -m 4096 tcp_lat > "$W/qperf.lat" 2>&1
	sed 's/^/   4 KiB messages: /' "$W/qperf.lat"
	wire_rtt=$(awk '/latency/ { v = $3; if ($4 == "ms") v *= 1000; if ($4 == "ns") v /= 1000; printf "%.1f", 2 * v }' "$W/qperf.lat")
	echo "   round trip of 4 KiB: ${wire_rtt:-?} us"
else
	echo "   qperf not installed (apt-get install qperf): no raw tcp round trip to compare with"
fi
echo "== transport (rdmapool bench: one client, per pool)"
"$B/src/tools/rdmapool" bench -c "$W/cluster.json" --seconds 4 > "$W/rb" && sed 's/^/   /' "$W/rb"
awk -v rtt="${wire_rtt:-0}" '$1 ~ /^[0-9]+$/ && rtt > 0 {
	printf "   peer %s: 4 KiB read / tcp round trip = %.2f (target <= 1.25)\n", $1, $3 / rtt }' "$W/rb"

# ---- measuring ----
# fio's terse output: field 7/8 read KiB/s and IOPS, 48/49 write KiB/s and IOPS
fio_job() { # DIR FIELD fio-args... -> the figure (MB/s or IOPS)
	local d=$1 f=$2
	shift 2
	fio --name=b --directory="$d" --minimal --group_reporting "$@" 2> "$W/fio.err" |
		awk -F';' -v f="$f" '{ v = $f; if (f == 7 || f == 48) v = v / 1024; printf "%.0f\n", v }'
}
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
rate() { awk -v n="$1" -v t="$2" 'BEGIN { printf "%.0f", (t > 0) ? n / t : 0 }'; }
timeit() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'; }

# metadata ops/s: one process, FILES of each
cat > "$W/metaops.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv)
{
	int n = atoi(argv[2]);
	char a[4096], b[4096];
	struct stat st;
	const char *names[] = { "create", "stat", "rename", "unlink", "mkdir", "rmdir" };
	for (int phase = 0; phase < 6; phase++) {
		double t0 = now();
		for (int i = 0; i < n; i++) {
			snprintf(a, sizeof(a), "%s/f%d", argv[1], i);
			snprintf(b, sizeof(b), "%s/g%d", argv[1], i);
			int rc = 0;
			switch (phase) {
			case 0: rc = open(a, O_CREAT | O_WRONLY, 0644); if (rc >= 0) rc = close(rc); break;
			case 1: rc = stat(a, &st); break;
			case 2: rc = rename(a, b); break;
			case 3: rc = unlink(b); break;
			case 4: rc = mkdir(a, 0755); break;
			case 5: rc = rmdir(a); break;
			}
			if (rc < 0) { perror(a); return 1; }
		}
		printf("%s %.0f\n", names[phase], n / (now() - t0));
	}
	return 0;
}
C
gcc -O2 -o "$W/metaops" "$W/metaops.c"

declare -A V      # V[workload.target] = "v1 v2 ..."
WORKLOADS=()
record() { # WORKLOAD TARGET VALUE (none: that run failed, shown as -)
	local w
	for w in "${WORKLOADS[@]}"; do [ "$w" = "$1" ] && break; done
	[ "${w:-}" = "$1" ] || WORKLOADS+=("$1")
	[ -n "$3" ] && V[$1.$2]="${V[$1.$2]:-} $3"
	return 0
}
one_round() { # TARGET: every workload once
	local t=$1 d=${DIR[$1]} s=$SIZE_MB q=$((SIZE_MB / 4)) out
	rm -rf "${d:?}"/*
	record "seq write 1M, fsync (MB/s)" "$t" "$(fio_job "$d" 48 --rw=write --bs=1M --size=${s}M --end_fsync=1 --filename=seq)"
	drop
	record "seq read 1M, cold (MB/s)" "$t" "$(fio_job "$d" 7 --rw=read --bs=1M --size=${s}M --filename=seq)"
	record "4K randwrite buffered (IOPS)" "$t" "$(fio_job "$d" 49 --rw=randwrite --bs=4k --size=256M --time_based --runtime=$SECS --filename=r)"
	record "4K randread buffered (IOPS)" "$t" "$(fio_job "$d" 8 --rw=randread --bs=4k --size=256M --time_based --runtime=$SECS --filename=r)"
	record "4K randwrite O_DIRECT (IOPS)" "$t" "$(fio_job "$d" 49 --rw=randwrite --bs=4k --size=256M --direct=1 --time_based --runtime=$SECS --filename=r)"
	record "4K randread O_DIRECT (IOPS)" "$t" "$(fio_job "$d" 8 --rw=randread --bs=4k --size=256M --direct=1 --time_based --runtime=$SECS --filename=r)"
	record "4K randwrite QD16 libaio (IOPS)" "$t" "$(fio_job "$d" 49 --rw=randwrite --bs=4k --size=256M --direct=1 --ioengine=libaio --iodepth=16 --time_based --runtime=$SECS --filename=r)"
	record "4K randread QD16 libaio (IOPS)" "$t" "$(fio_job "$d" 8 --rw=randread --bs=4k --size=256M --direct=1 --ioengine=libaio --iodepth=16 --time_based --runtime=$SECS --filename=r)"
	record "4 threads, one file, 1M (MB/s)" "$t" "$(fio_job "$d" 48 --rw=write --bs=1M --numjobs=4 --size=${q}M --offset_increment=${q}M --filename=shared --end_fsync=1)"
	record "4 threads, 4 files, 1M (MB/s)" "$t" "$(fio_job "$d" 48 --rw=write --bs=1M --numjobs=4 --size=${q}M --end_fsync=1)"
	rm -rf "${d:?}"/*
	record "cp -r /usr/include (s)" "$t" "$(timeit cp -r /usr/include "$d/inc")"
	mkdir -p "$d/m"
	out=$("$W/metaops" "$d/m" "$FILES") || echo "bench: metadata ops on $t failed" >&2
	for op in create stat rename unlink mkdir rmdir; do
		record "$op (ops/s)" "$t" "$(echo "$out" | awk -v o=$op '$1 == o { print $2 }')"
	done
	mkdir -p "$d/l"
	(cd "$d/l" && seq 1 "$FILES" | sed 's/^/f/' | xargs touch) || echo "bench: creating $FILES files on $t failed" >&2
	drop
	record "ls -lR of $FILES files (s)" "$t" "$(timeit ls -lR "$d/l")"
	rm -rf "${d:?}"/*
}
for r in $(seq 1 "$RUNS"); do
	for t in $TARGETS; do
		echo "== round $r: $t" >&2
		one_round "$t"
	done
done

# ---- the table: medians, spread, ratios ----
med() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { tr ' ' '\n' | grep . | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
ratio() { awk -v a="$1" -v b="$2" -v inv="$3" 'BEGIN { if (a <= 0 || b <= 0) print "-"; else printf "%.2f", inv ? b / a : a / b }'; }
echo
echo "== rounds: $RUNS, targets taking turns; median (spread); ratio = rdmapool / other (for times: other / rdmapool, so higher is better)"
printf '%-34s %22s %22s %22s %7s %7s\n' workload rdmapool passthrough_ll tmpfs "vs pt" "vs tmp"
for w in "${WORKLOADS[@]}"; do
	inv=0; [[ "$w" == *"(s)" ]] && inv=1
	line=$(printf '%-34s' "$w")
	declare -A m=()
	for t in rdmapool passthrough tmpfs; do
		vals=${V[$w.$t]:-}
		m[$t]=$(echo "$vals" | med)
		if [ -n "$vals" ]; then line+=$(printf ' %22s' "${m[$t]} ($(echo "$vals" | spread))"); else line+=$(printf ' %22s' -); fi
	done
	line+=$(printf ' %7s %7s' "$(ratio "${m[rdmapool]}" "${m[passthrough]}" $inv)" "$(ratio "${m[rdmapool]}" "${m[tmpfs]}" $inv)")
	echo "$line"
done
rss() { ps -o rss= -p "$1" 2> /dev/null | awk '{ printf "%.1f MiB", $1 / 1024 }'; }
echo
echo "== memory after the run: rdmapoolfs $(rss "$(pgrep -f "rdmapoolfs $W/cluster.json" | head -1)")," \
	"passthrough_ll $(rss "$(pgrep -f "$W/passthrough_ll" | head -1)")," \
	"pool servers $(for p in "$W"/pool*.pid; do ps -o rss= -p "$(cat "$p")"; done | awk '{ s += $1 } END { printf "%.0f MiB", s / 1024 }') (their regions, as touched)"
