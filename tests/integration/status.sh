#!/bin/bash
# rdmapool status shows each pool with transport, size and usage.
. "$(dirname "$0")/lib.sh"

make_cluster 2
start_pool 0 64M || bail "pool 0 did not start"
start_pool 1 32M || bail "pool 1 did not start"
"$HELPERS/alloc_stress" "$CLUSTER" alloc 1 5 1 1 > /dev/null
"$RDMAPOOL" status -c "$CLUSTER" > "$T/st"
rc=$?
diag "$(cat "$T/st")"
is "exit 0 with all pools up" "$rc" "0"
H=${RP_TEST_HOST:-127.0.0.1}; X=${RP_TEST_TRANSPORT:-tcp}
grep -Eq "^0 +$H:[0-9]+ +up +$X +64\.0 MiB +0 B +63\.[0-9] MiB +[0-9.]+us" "$T/st" && ok "pool 0 line ($X)" || not_ok "pool 0 line ($X)"
grep -Eq "^1 +$H:[0-9]+ +up +$X +32\.0 MiB +20\.0 KiB " "$T/st" && ok "pool 1 line shows 5 used blocks ($X)" || not_ok "pool 1 line ($X)"
stop_pool 1 TERM
"$RDMAPOOL" status -c "$CLUSTER" > "$T/st2"
is "exit 3 with a pool down" "$?" "3"
grep -Eq '^1 .* down .*Connection refused' "$T/st2" && ok "down pool named with the reason" || not_ok "down pool named"
done_testing
