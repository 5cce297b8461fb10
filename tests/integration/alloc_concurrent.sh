#!/bin/bash
# Several processes allocate from the same pool at once with remote CAS:
# no block is handed out twice, no bit is lost, and freeing returns them all.
. "$(dirname "$0")/lib.sh"

make_cluster 2
start_pool 0 64M || bail "pool 0 did not start"
start_pool 1 64M || bail "pool 1 did not start"
used0=$(blocks_used 0)
is "pool 0 starts empty" "$used0" "0"

# Same starting cursor would be the worst case; they start at random words
# but all hammer one pool.
pids=()
for c in 1 2 3 4 5 6; do
	"$HELPERS/alloc_stress" "$CLUSTER" alloc 0 300 8 "$c" > "$T/ext$c" 2> "$T/err$c" &
	pids+=($!)
done
# (each by its pid: 'wait -n' after some have already ended is not reliable)
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
is "six concurrent allocators finished without error" "$fail" "0"
[ $fail = 0 ] || diag "allocators said: $(cat "$T"/err?)"
cat "$T"/ext? | grep -v '^#' > "$T/all"
n_ext=$(wc -l < "$T/all")
is "1800 extents granted" "$n_ext" "1800"
awk '{ for (i = 0; i < $3; i++) print $1, $2 + i }' "$T/all" | sort > "$T/blocks"
total=$(wc -l < "$T/blocks")
dups=$(uniq -d "$T/blocks" | wc -l)
is "no block granted twice" "$dups" "0"
is "every granted block is marked in the bitmap, and nothing else" "$(blocks_used 0)" "$total"

# Concurrent allocation over both pools spreads extents.
pids=()
for c in 7 8; do
	"$HELPERS/alloc_stress" "$CLUSTER" alloc -1 200 4 "$c" > "$T/spread$c" 2> "$T/err$c" &
	pids+=($!)
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
is "two allocators over both pools finished without error" "$fail" "0"
[ $fail = 0 ] || diag "allocators said: $(cat "$T/err7" "$T/err8") $(grep -h '^#' "$T/spread7" "$T/spread8")"
is "400 extents granted over both pools" "$(cat "$T"/spread? | grep -vc '^#')" "400"
pools=$(cat "$T"/spread? | awk '{print $1}' | sort -u | tr '\n' ' ')
is "allocation spreads over both pools" "$pools" "0 1 "

# Free concurrently, then everything is back.
split -n l/3 "$T/all" "$T/part."
pids=()
for f in "$T"/part.*; do "$HELPERS/alloc_stress" "$CLUSTER" free "$f" & pids+=($!); done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
is "three concurrent freers finished without error" "$fail" "0"
cat "$T"/spread? > "$T/spread"
check "free the spread extents" "$HELPERS/alloc_stress" "$CLUSTER" free "$T/spread"
left=$(blocks_used 0)
is "pool 0 empty again: no bit lost" "$left" "0"
[ "$left" = 0 ] || diag "allocators said: $(cat "$T"/err?)"
is "pool 1 empty again" "$(blocks_used 1)" "0"
head -1 "$T/all" > "$T/again"
check_fails "double free detected" "not allocated|Structure needs cleaning" \
	"$HELPERS/alloc_stress" "$CLUSTER" free "$T/again"
done_testing
