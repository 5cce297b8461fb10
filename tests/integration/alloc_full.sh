#!/bin/bash
# A full pool answers ENOSPC, never a double grant, and recovers when freed.
. "$(dirname "$0")/lib.sh"

make_cluster 1
start_pool 0 2M || bail "pool did not start"
total=$("$RDMAPOOL" status -c "$CLUSTER" | awk '/blocks:/ { print $2 }')
[ "$total" -gt 100 ] && ok "small pool has $total blocks" || not_ok "small pool has blocks"
"$HELPERS/alloc_stress" "$CLUSTER" alloc 0 100000 5 1 > "$T/a" 2> "$T/a.err" &
"$HELPERS/alloc_stress" "$CLUSTER" alloc 0 100000 3 2 > "$T/b" 2> "$T/b.err" &
wait
grep -q ENOSPC "$T/a" && grep -q ENOSPC "$T/b" && ok "both allocators ran into ENOSPC" || not_ok "both allocators ran into ENOSPC"
granted=$(cat "$T/a" "$T/b" | grep -v '^#' | awk '{ s += $3 } END { print s }')
is "every block granted exactly once before ENOSPC" "$granted" "$total"
dups=$(cat "$T/a" "$T/b" | grep -v '^#' | awk '{ for (i = 0; i < $3; i++) print $2 + i }' | sort | uniq -d | wc -l)
is "no overlap" "$dups" "0"
is "status shows the pool full" "$(blocks_used 0)" "$total"
out=$("$HELPERS/alloc_stress" "$CLUSTER" alloc 0 1 1 3)
is "one more allocation is ENOSPC" "$out" "# ENOSPC after 0 extents"
cat "$T/a" "$T/b" | grep -v '^#' > "$T/all"
check "free everything" "$HELPERS/alloc_stress" "$CLUSTER" free "$T/all"
is "pool empty again" "$(blocks_used 0)" "0"
out=$("$HELPERS/alloc_stress" "$CLUSTER" alloc 0 1 1 3)
[ -n "$out" ] && [ "${out#\#}" = "$out" ] && ok "allocation works again" || not_ok "allocation works again"
done_testing
