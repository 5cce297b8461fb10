#!/bin/bash
# Inside the Soft-RoCE VM, after the tests: the rdma half of the benchmark.
# perftest's own figures on the rxe link next to `rdmapool bench` over the
# same link, as ratios. Printed as TAP comments, never judged: under qemu's
# emulation the absolute figures mean nothing, and even the ratios are only
# a rough guide (both sides share two emulated CPUs).
set -u
: "${top_builddir:?}"
H=10.0.0.2
W=$(mktemp -d)
B=$top_builddir
say() { echo "# bench: $*"; }
trap 'for p in "$W"/pool*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2> /dev/null; done; rm -rf "$W"' EXIT

# perf TOOL ARGS...: the server on rxe1 (at $H) in the background, the client
# on rxe0; the client's output in $W/out. Connection through rdma_cm (-R),
# which picks the right RoCE GID; without it if that fails.
perf() {
	local tool=$1 cm
	shift
	for cm in -R ""; do
		timeout 60 "$tool" -d rxe1 $cm "$@" > "$W/srv" 2>&1 &
		local srv=$!
		sleep 1
		timeout 60 "$tool" -d rxe0 $cm "$@" "$H" > "$W/out" 2>&1
		local rc=$?
		wait "$srv" 2> /dev/null
		[ $rc = 0 ] && return 0
	done
	say "$tool $*: failed: $(tail -n 2 "$W/out" | tr '\n' ' ')"
	return 1
}
# the figure in column COL of the result line for message size BYTES
col() { awk -v b="$1" -v c="$2" '$1 == b && NF >= c { print $c; exit }' "$W/out"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }

command -v ib_read_lat > /dev/null || { say "perftest not installed: no verbs reference"; exit 0; }
lat=- bw=- alat=-
# latency columns: bytes iterations t_min t_max t_typical ...; bandwidth:
# bytes iterations peak average msgrate
perf ib_read_lat -s 4096 -n 2000 && lat=$(col 4096 5)
perf ib_read_bw -s 1048576 -n 200 && bw=$(col 1048576 4)
perf ib_atomic_lat -n 2000 && alat=$(col 8 5)
say "perftest over rxe: ib_read_lat 4 KiB ${lat} us (typical), ib_read_bw 1 MiB ${bw} MB/s (perftest's MB), ib_atomic_lat ${alat} us"

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$W/secret"
chmod 600 "$W/secret"
cat > "$W/cluster.json" <<JSON
{ "version": 1, "name": "vmbench", "transport": "rdma", "secret_file": "secret",
  "peers": [ { "id": 0, "host": "$H", "port": 17491 } ] }
JSON
"$B/src/server/rdmapoold" -c "$W/cluster.json" --id 0 --size 256M --pid-file "$W/pool0.pid" \
	--log-file "$W/pool0.log" || { say "rdmapoold did not start"; exit 0; }
if "$B/src/tools/rdmapool" bench -c "$W/cluster.json" --seconds 4 > "$W/rb" 2>&1; then
	sed 's/^/# bench:   /' "$W/rb"
	# PEER TRANSPORT 4K-READ-us p99-us READ-MB/s WRITE-MB/s CAS-ops/s
	read -r _ _ rlat _ rbw _ cas < <(awk '$1 == "0"' "$W/rb")
	acas=$(awk -v l="$alat" 'BEGIN { if (l > 0) printf "%.0f", 1e6 / l; else print 0 }')
	say "rdmapool / verbs: 4 KiB read latency $(ratio "$rlat" "$lat") (target <= 1.25)," \
		"1 MiB read bandwidth $(ratio "$rbw" "$bw") (target >= 0.8)," \
		"atomics/s $(ratio "$cas" "$acas") (vs 1 / ib_atomic_lat)"
else
	say "rdmapool bench failed: $(tail -n 2 "$W/rb" | tr '\n' ' ')"
fi
exit 0
