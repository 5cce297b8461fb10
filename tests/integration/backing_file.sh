#!/bin/bash
# A pool backed by a file keeps its bytes across a restart, and a backing file
# that does not match is refused, not reformatted.
. "$(dirname "$0")/lib.sh"

make_cluster 1
B="$T/pool0.img"
start_pool 0 16M --backing-file "$B" || bail "pool did not start"
head -c 200000 /dev/urandom > "$T/blob"
check "write data" "$RDMAPOOL" write -c "$CLUSTER" --peer 0 --offset 300001 --in "$T/blob"
check "allocate blocks" bash -c "'$HELPERS/alloc_stress' '$CLUSTER' alloc 0 10 8 1 > '$T/ext'"
used=$(blocks_used 0)
check "SIGTERM flushes and stops" stop_pool 0 TERM
check "restart from the backing file" start_pool 0 16M --backing-file "$B"
grep -q "existing pool kept" "$T/pool0.log" && ok "kept, not reformatted" || not_ok "kept, not reformatted"
check "read back" "$RDMAPOOL" read -c "$CLUSTER" --peer 0 --offset 300001 --length 200000 --out "$T/back"
check "bytes survived the restart" cmp "$T/blob" "$T/back"
is "allocations survived the restart" "$(blocks_used 0)" "$used"
stop_pool 0 KILL
check "restart after kill -9" start_pool 0 16M --backing-file "$B"
check "read back after kill -9" "$RDMAPOOL" read -c "$CLUSTER" --peer 0 --offset 300001 --length 200000 --out "$T/back2"
check "bytes survived kill -9 (shared mapping)" cmp "$T/blob" "$T/back2"
stop_pool 0 TERM

# the layout version: a version 1 pool (an older server's) is moved to 3 at
# start, so that older binaries refuse it; an unknown version is refused
sb_version() { # FILE VERSION: set the superblock's version, checksum made right
	python3 - "$1" "$2" <<'PY'
import struct, sys
p, v = sys.argv[1], int(sys.argv[2])
tab = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    tab.append(c)
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = tab[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
with open(p, "r+b") as f:
    sb = bytearray(f.read(4096))
    sb[8:12] = struct.pack("<I", v)
    sb[4092:4096] = struct.pack("<I", crc32c(bytes(sb[:4092])))
    f.seek(0)
    f.write(sb)
PY
}
cp "$B" "$T/v1.img"
sb_version "$T/v1.img" 1
check "a version 1 pool starts" start_pool 0 16M --backing-file "$T/v1.img"
grep -q "moved to version 3" "$T/pool0.log" && ok "and is moved to version 3" || not_ok "and is moved to version 3"
"$RDMAPOOL" read -c "$CLUSTER" --peer 0 --offset 8 --length 4 --out "$T/ver" > /dev/null
is "its superblock says 3" "$(od -An -tu4 "$T/ver" | tr -d ' ')" "3"
check "and its bytes are kept" "$RDMAPOOL" read -c "$CLUSTER" --peer 0 --offset 300001 --length 200000 --out "$T/back3"
check "(the same bytes)" cmp "$T/blob" "$T/back3"
stop_pool 0 TERM
sb_version "$T/v1.img" 4
check_fails "an unknown layout version refused" "pool layout version 4, this server knows 1 to 3" \
	"$RDMAPOOLD" -c "$CLUSTER" --id 0 --size 16M --backing-file "$T/v1.img" --foreground

check_fails "other size refused" "holds 16777216 bytes but --size asks for 33554432" \
	"$RDMAPOOLD" -c "$CLUSTER" --id 0 --size 32M --backing-file "$B" --foreground
sed 's/"name": "test"/"name": "other"/' "$CLUSTER" > "$T/other.json"
check_fails "other cluster refused" "belongs to cluster \"test\", not \"other\"" \
	"$RDMAPOOLD" -c "$T/other.json" --id 0 --size 16M --backing-file "$B" --foreground
cp "$B" "$T/damaged.img"
printf 'XX' | dd of="$T/damaged.img" bs=1 seek=200 conv=notrunc 2> /dev/null
check_fails "damaged superblock refused" "superblock is damaged" \
	"$RDMAPOOLD" -c "$CLUSTER" --id 0 --size 16M --backing-file "$T/damaged.img" --foreground
check "--reformat wipes it" start_pool 0 16M --backing-file "$T/damaged.img" --reformat
is "reformatted pool is empty" "$(blocks_used 0)" "0"
stop_pool 0 TERM
# rdma over a file on a disk filesystem: refused whatever the kernel (older
# ones register it and lose what RDMA writes at writeback)
fst=$(stat -f -c %T "$T")
if [ "$fst" != tmpfs ] && [ "$fst" != hugetlbfs ]; then
	sed 's/"transport": "[a-z]*"/"transport": "rdma"/' "$CLUSTER" > "$T/rdma.json"
	check_fails "rdma over a disk-backed file refused" "not safe to register for RDMA" \
		"$RDMAPOOLD" -c "$T/rdma.json" --id 0 --size 16M --backing-file "$B" --foreground
else
	ok "rdma over a disk-backed file refused # SKIP $T is on $fst, no disk filesystem here"
fi
done_testing
