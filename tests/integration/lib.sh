# Shared shell library for the integration tests: TAP output, a scratch
# folder, a cluster file with free loopback ports, and real rdmapoold
# processes that are always stopped at exit.
set -u

: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
RDMAPOOLD="$top_builddir/src/server/rdmapoold"
RDMAPOOL="$top_builddir/src/tools/rdmapool"
HELPERS="$top_builddir/tests/helpers"

T=$(mktemp -d "${TMPDIR:-/tmp}/rdmapool-test.XXXXXX")
CLUSTER="$T/cluster.json"
_tap_n=0
_tap_failed=0
_pids=""

cleanup() {
	for pidf in "$T"/pool*.pid; do
		[ -f "$pidf" ] || continue
		pid=$(cat "$pidf" 2>/dev/null) || continue
		kill -CONT "$pid" 2>/dev/null
		kill -KILL "$pid" 2>/dev/null
	done
	for p in $_pids; do kill -KILL "$p" 2>/dev/null; done
	if [ "$_tap_failed" -gt 0 ] || [ -n "${KEEP_TMP:-}" ]; then
		for f in "$T"/*.log; do
			[ -f "$f" ] || continue
			echo "# --- $f"
			sed 's/^/#   /' "$f" | tail -n 40
		done
	fi
	rm -rf "$T"
	rp_release_ports "$T"
}
trap cleanup EXIT

ok() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $*"; }
not_ok() { _tap_n=$((_tap_n + 1)); _tap_failed=$((_tap_failed + 1)); echo "not ok $_tap_n - $*"; }
diag() { echo "$*" | sed 's/^/# /'; }
done_testing() { echo "1..$_tap_n"; [ "$_tap_failed" -eq 0 ]; exit $?; }
bail() { _tap_failed=$((_tap_failed + 1)); echo "Bail out! $*"; exit 1; }

# check DESC CMD...: the command must succeed.
check() {
	local desc=$1
	shift
	if "$@" > "$T/last.out" 2>&1; then ok "$desc"; else not_ok "$desc"; diag "$(tail -n 20 "$T/last.out")"; fi
}
# check_fails DESC PATTERN CMD...: the command must fail and print PATTERN.
check_fails() {
	local desc=$1 pat=$2
	shift 2
	if "$@" > "$T/last.out" 2>&1; then
		not_ok "$desc (succeeded)"
		diag "$(tail -n 20 "$T/last.out")"
	elif grep -Eq -- "$pat" "$T/last.out"; then
		ok "$desc"
	else
		not_ok "$desc (no /$pat/ in output)"
		diag "$(tail -n 20 "$T/last.out")"
	fi
}
# is DESC GOT WANT
is() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1"; diag "got:  '$2'" "want: '$3'"; fi
}

. "$top_srcdir/tests/common/ports.sh"
port_free() { _rp_port_free "$@"; }
pick_port() { rp_reserve_port "$T"; }

# make_cluster N [EXTRA_TOP_LEVEL_JSON]: N peers on 127.0.0.1, tcp transport.
make_cluster() {
	local n=$1 extra=${2:-} i sep=""
	printf 'rdmapool-test-secret-%s\n' "$RANDOM$RANDOM$RANDOM" > "$T/secret"
	chmod 600 "$T/secret"
	{
		echo "{"
		echo "  \"version\": 1,"
		echo "  \"name\": \"test\","
		echo "  \"transport\": \"${RP_TEST_TRANSPORT:-tcp}\","
		echo "  \"secret_file\": \"secret\","
		echo "  \"block_size\": 4096,"
		[ -n "$extra" ] && echo "  $extra,"
		echo "  \"peers\": ["
		for i in $(seq 0 $((n - 1))); do
			printf '%s    { "id": %d, "host": "%s", "port": %d }' "$sep" "$i" \
				"${RP_TEST_HOST:-127.0.0.1}" "$(pick_port)"
			sep=$',\n'
		done
		echo
		echo "  ]"
		echo "}"
	} > "$CLUSTER"
}

# start_pool ID SIZE [rdmapoold args...]: returns once the server listens.
start_pool() {
	local id=$1 size=$2
	shift 2
	"$RDMAPOOLD" -c "$CLUSTER" --id "$id" --size "$size" --pid-file "$T/pool$id.pid" \
		--log-file "$T/pool$id.log" --metrics "$T/pool$id.sock" "$@"
}

pool_pid() { cat "$T/pool$1.pid"; }

# stop_pool ID [SIGNAL]: signal the server and wait for it to exit.
stop_pool() {
	local id=$1 sig=${2:-TERM} pid i
	pid=$(pool_pid "$id") || return 1
	kill -CONT "$pid" 2>/dev/null
	kill "-$sig" "$pid" 2>/dev/null
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || { rm -f "$T/pool$id.pid"; return 0; }
		sleep 0.1
	done
	return 1
}

# Blocks used in pool with the given peer id, from rdmapool status.
blocks_used() {
	"$RDMAPOOL" status -c "$CLUSTER" | awk -v id="$1" '
		$1 == id { found = 1; next }
		found && /blocks:/ { print $4; exit }'
}
