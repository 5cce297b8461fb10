#!/bin/bash
# rdmapoold under a service manager: the unit file passes systemd-analyze
# verify, the server says READY=1 (sd_notify) only once it serves, and
# STOPPING=1 when it stops; --backing-dir keeps each peer's pool in a folder.
# systemd is not PID 1 here: the notify socket is our own (notify_listen).
. "$(dirname "$0")/lib.sh"

make_cluster 1
unit="$T/rdmapoold@.service"
sed "s|@sbindir@|$top_builddir/src/server|g" "$top_srcdir/systemd/rdmapoold@.service.in" > "$unit"
if command -v systemd-analyze > /dev/null; then
	check "systemd-analyze verify rdmapoold@.service" systemd-analyze verify --man=no "$unit"
	sed 's|^ExecStart=[^ ]*|ExecStart=/nonexistent/rdmapoold|' "$unit" > "$T/broken@.service"
	check_fails "verify refuses a unit whose program is missing" "not executable" \
		systemd-analyze verify --man=no "$T/broken@.service"
else
	not_ok "systemd-analyze is not installed (Debian: systemd)"
fi

# READY=1 arrives after the listener is up: the status right after it connects.
sock="$T/notify.sock"
"$HELPERS/notify_listen" "$sock" 10000 READY=1 > "$T/notified" &
lpid=$!
for i in $(seq 1 50); do [ -S "$sock" ] && break; sleep 0.1; done
NOTIFY_SOCKET="$sock" "$RDMAPOOLD" -c "$CLUSTER" --id 0 --size 16M --foreground \
	--backing-dir "$T" 2> "$T/pool0.log" &
spid=$!
_pids="$_pids $spid"
wait $lpid
is "READY=1 sent" "$?" "0"
check "the server answers right after READY=1" "$RDMAPOOL" status -c "$CLUSTER"
grep -q "MAINPID=$spid|" "$T/notified" && ok "MAINPID names the server" ||
	{ not_ok "MAINPID names the server"; diag "$(cat "$T/notified")"; }
grep -q "STATUS=peer 0 serving 16.0 MiB over tcp" "$T/notified" && ok "STATUS says what it serves" ||
	{ not_ok "STATUS says what it serves"; diag "$(cat "$T/notified")"; }
check "--backing-dir: the pool is in DIR/CLUSTER-ID.pool" test -s "$T/test-0.pool"

head -c 100000 /dev/urandom > "$T/blob"
check "write data" "$RDMAPOOL" write -c "$CLUSTER" --peer 0 --offset 65536 --in "$T/blob"
"$HELPERS/notify_listen" "$sock" 10000 STOPPING=1 > "$T/stopping" &
lpid=$!
for i in $(seq 1 50); do grep -q listening "$T/stopping" && break; sleep 0.1; done
kill -TERM $spid
wait $lpid
is "STOPPING=1 sent on SIGTERM" "$?" "0"
wait $spid
is "the server exits 0 on SIGTERM" "$?" "0"

# Detached: the pid named is the child that serves, as in its pid file.
"$HELPERS/notify_listen" "$sock" 10000 READY=1 > "$T/notified2" &
lpid=$!
for i in $(seq 1 50); do grep -q listening "$T/notified2" && break; sleep 0.1; done
NOTIFY_SOCKET="$sock" start_pool 0 16M --backing-dir "$T"
wait $lpid
is "READY=1 sent when detached" "$?" "0"
grep -q "MAINPID=$(pool_pid 0)|" "$T/notified2" && ok "MAINPID is the detached server" ||
	{ not_ok "MAINPID is the detached server"; diag "$(cat "$T/notified2") pid $(pool_pid 0)"; }
check "read back from the same backing file" "$RDMAPOOL" read -c "$CLUSTER" --peer 0 \
	--offset 65536 --length 100000 --out "$T/back"
check "bytes kept across the restart" cmp "$T/blob" "$T/back"
stop_pool 0 TERM

check_fails "--backing-file and --backing-dir together refused" "give one" \
	"$RDMAPOOLD" -c "$CLUSTER" --id 0 --size 16M --backing-dir "$T" --backing-file "$T/x"
NOTIFY_SOCKET=relative "$RDMAPOOLD" -c "$CLUSTER" --id 0 --size 16M --foreground \
	--pid-file "$T/pool0.pid" 2> "$T/badsock.log" &
spid=$!
for i in $(seq 1 50); do [ -s "$T/pool0.pid" ] && break; sleep 0.1; done
check "a notify socket that is not a path: still serves" "$RDMAPOOL" status -c "$CLUSTER"
kill -TERM $spid; wait $spid
grep -q "cannot notify the service manager" "$T/badsock.log" && ok "... and says it cannot notify" ||
	{ not_ok "... and says it cannot notify"; diag "$(cat "$T/badsock.log")"; }

check_fails "the example cluster file parses (only the peer id is wrong)" "no peer with id 9" \
	"$RDMAPOOLD" -c "$top_srcdir/examples/cluster.json" --id 9 --size 16M --foreground
done_testing
