#!/bin/bash
# rdmapoold starts, serves, refuses a taken port, and stops cleanly on SIGTERM.
. "$(dirname "$0")/lib.sh"

make_cluster 1
check "rdmapoold starts and detaches" start_pool 0 32M
pid=$(pool_pid 0)
check "process is running" kill -0 "$pid"
check "status reaches it" "$RDMAPOOL" status -c "$CLUSTER"
grep -q "serving 32.0 MiB on 127.0.0.1" "$T/pool0.log" && ok "log says what it serves" || not_ok "log says what it serves"
cp "$T/pool0.pid" "$T/keep.pid"
check_fails "second server on the same port refused" "tcp listen on 127.0.0.1:[0-9]+: Address already in use" \
	"$RDMAPOOLD" -c "$CLUSTER" --id 0 --size 8M --foreground
check "SIGTERM stops it" stop_pool 0 TERM
[ ! -e "$T/pool0.pid" ] && ok "pid file removed" || not_ok "pid file removed"
grep -q "shutting down" "$T/pool0.log" && ok "shutdown logged" || not_ok "shutdown logged"
check_fails "status reports it down" "down .*Connection refused" "$RDMAPOOL" status -c "$CLUSTER"
"$RDMAPOOL" status -c "$CLUSTER" > /dev/null 2>&1
is "status exits 3 when a pool is down" "$?" "3"
done_testing
