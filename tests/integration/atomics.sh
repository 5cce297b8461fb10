#!/bin/bash
# Compare-and-swap and fetch-and-add semantics, and atomicity across clients.
. "$(dirname "$0")/lib.sh"

make_cluster 1
start_pool 0 16M || bail "pool did not start"
off=8192 # in the home area, which starts zeroed
out=$("$RDMAPOOL" cas -c "$CLUSTER" --peer 0 --offset $off --expect 0 --swap 42)
is "cas on a zero word swaps and returns the old value" "$out" "old=0 swapped"
out=$("$RDMAPOOL" cas -c "$CLUSTER" --peer 0 --offset $off --expect 7 --swap 99)
is "cas with a wrong expectation leaves the word and returns it" "$out" "old=42 unchanged"
out=$("$RDMAPOOL" faa -c "$CLUSTER" --peer 0 --offset $off --add 8)
is "faa returns the old value" "$out" "old=42"
out=$("$RDMAPOOL" faa -c "$CLUSTER" --peer 0 --offset $off --add 0)
is "faa added" "$out" "old=50"
out=$("$RDMAPOOL" faa -c "$CLUSTER" --peer 0 --offset $off --add 18446744073709551615)
out=$("$RDMAPOOL" faa -c "$CLUSTER" --peer 0 --offset $off --add 0)
is "faa wraps modulo 2^64 (adding -1)" "$out" "old=49"
check_fails "unaligned cas refused" "Invalid argument" \
	"$RDMAPOOL" cas -c "$CLUSTER" --peer 0 --offset 8193 --expect 0 --swap 1
check_fails "unaligned faa refused" "Invalid argument" \
	"$RDMAPOOL" faa -c "$CLUSTER" --peer 0 --offset 8196 --add 1

# 4 clients x 100 increments each: no increment may be lost.
off2=16384
for c in 1 2 3 4; do
	( for i in $(seq 1 100); do "$RDMAPOOL" faa -c "$CLUSTER" --peer 0 --offset $off2 --add 1 > /dev/null || exit 1; done ) &
done
wait
out=$("$RDMAPOOL" faa -c "$CLUSTER" --peer 0 --offset $off2 --add 0)
is "400 concurrent fetch-and-adds from 4 processes all counted" "$out" "old=400"

# 4 clients race a cas on the same word from 0: exactly one wins.
off3=24576
for c in 1 2 3 4; do
	"$RDMAPOOL" cas -c "$CLUSTER" --peer 0 --offset $off3 --expect 0 --swap $c > "$T/cas$c" &
done
wait
winners=$(cat "$T"/cas? | grep -c swapped)
is "exactly one of 4 racing cas wins" "$winners" "1"
done_testing
