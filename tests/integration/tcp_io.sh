#!/bin/bash
# Reads and writes over the tcp transport at many offsets and sizes, single
# and batched, against two real pool servers; plus the CLI round trip.
. "$(dirname "$0")/lib.sh"

make_cluster 2
start_pool 0 64M || bail "pool 0 did not start"
start_pool 1 64M || bail "pool 1 did not start"
check "random I/O over two pools matches a local mirror (seed 1)" "$HELPERS/io_check" "$CLUSTER" 400 1
check "random I/O, seed 2, concurrently with seed 3" bash -c \
	"'$HELPERS/io_check' '$CLUSTER' 300 2 4 0 & a=\$!; '$HELPERS/io_check' '$CLUSTER' 300 3 4 8 >/dev/null; b=\$?; wait \$a && [ \$b = 0 ]"
head -c 10000 /dev/urandom > "$T/blob"
check "cli write at an unaligned offset" "$RDMAPOOL" write -c "$CLUSTER" --peer 1 --offset 1000003 --in "$T/blob"
check "cli read back" "$RDMAPOOL" read -c "$CLUSTER" --peer 1 --offset 1000003 --length 10000 --out "$T/back"
check "bytes identical" cmp "$T/blob" "$T/back"
done_testing
