#!/bin/bash
# A pool server that dies or hangs mid-run gives clients clear errors within
# the operation timeout, never a hang.
. "$(dirname "$0")/lib.sh"

make_cluster 1 '"op_timeout_ms": 1000, "connect_timeout_ms": 1000'
start_pool 0 64M || bail "pool did not start"

# Killed mid-run: a long I/O loop must stop with an error, not hang.
timeout 60 "$HELPERS/io_check" "$CLUSTER" 1000000 5 > "$T/io.out" 2>&1 &
io=$!
sleep 1
stop_pool 0 KILL
wait $io
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && ok "client failed (exit $rc) instead of hanging" || not_ok "client failed instead of hanging (exit $rc)"
grep -Eq "Connection refused|Connection reset|Broken pipe|timed out|not connected|Transport endpoint" "$T/io.out" && ok "with a clear error" || { not_ok "with a clear error"; diag "$(tail -3 "$T/io.out")"; }
check_fails "new client: connection refused" "Connection refused" \
	timeout 20 "$RDMAPOOL" read -c "$CLUSTER" --peer 0 --offset 0 --length 8

# Hung (SIGSTOP).
start_pool 0 64M || bail "pool did not restart"
if [ "${RP_TEST_TRANSPORT:-tcp}" = rdma ]; then
	# One-sided operations need no server CPU: a stopped server keeps serving
	# connected clients; only new connections (which need its CM thread) wait.
	check "write while the server runs" "$RDMAPOOL" write -c "$CLUSTER" --peer 0 --offset 8192 --data before
	timeout 60 "$HELPERS/io_check" "$CLUSTER" 1000000 6 > "$T/io2.out" 2>&1 &
	io=$!
	sleep 1
	kill -STOP "$(pool_pid 0)"
	sleep 3
	kill -0 $io 2>/dev/null && ok "rdma I/O goes on while the server process is stopped" || { not_ok "rdma I/O goes on while the server process is stopped"; diag "$(tail -3 "$T/io2.out")"; }
	kill $io 2>/dev/null
	wait $io 2>/dev/null
else
	timeout 60 "$HELPERS/io_check" "$CLUSTER" 1000000 6 > "$T/io2.out" 2>&1 &
	io=$!
	sleep 1
	kill -STOP "$(pool_pid 0)"
	wait $io
	rc=$?
	[ $rc -ne 0 ] && [ $rc -ne 124 ] && ok "client of a hung server failed (exit $rc) instead of hanging" || not_ok "client of a hung server failed instead of hanging (exit $rc)"
	grep -Eq "timed out" "$T/io2.out" && ok "with a timeout error" || { not_ok "with a timeout error"; diag "$(tail -3 "$T/io2.out")"; }
fi
check_fails "new client of a hung server: no greeting" "timed out" \
	timeout 20 "$RDMAPOOL" read -c "$CLUSTER" --peer 0 --offset 0 --length 8
kill -CONT "$(pool_pid 0)"
check "server serves again after SIGCONT" timeout 20 "$RDMAPOOL" read -c "$CLUSTER" --peer 0 --offset 0 --length 8 --out /dev/null
done_testing
