#!/bin/bash
# Regenerate the seed corpus of the fuzz targets from real parts: cluster
# files like the tests' own, and a superblock, volume records and placement
# records cut out of the backing files of two rdmapoold after a replicated
# mkfs. Replay seeds are written by hand below (record layouts: record.c).
#   tests/fuzz/make-seeds.sh BUILDDIR
set -euo pipefail
B=$(cd "$1" && pwd)
C=$(cd "$(dirname "$0")" && pwd)/corpus
T=$(mktemp -d)
trap 'kill $(cat "$T"/*.pid 2>/dev/null) 2>/dev/null; rm -rf "$T"; true' EXIT
mkdir -p "$C/fuzz_cluster" "$C/fuzz_home" "$C/fuzz_replay"

printf 'rdmapool-seed-secret-0123456789\n' > "$T/secret"
chmod 600 "$T/secret"
cat > "$T/cluster.json" <<JSON
{
  "version": 1,
  "name": "seed",
  "transport": "tcp",
  "secret_file": "secret",
  "block_size": 4096,
  "op_timeout_ms": 2000,
  "peers": [
    { "id": 0, "host": "127.0.0.1", "port": 47310, "zone": "a" },
    { "id": 1, "host": "127.0.0.1", "port": 47311, "transport": "tcp", "zone": "b" }
  ]
}
JSON
cp "$T/cluster.json" "$C/fuzz_cluster/two-peers.json"
printf '{"version":1,"name":"x","secret_file":"/s","peers":[{"id":3,"host":"h","port":1,"device":"rxe0","ib_port":1}]}' \
	> "$C/fuzz_cluster/rdma-device.json"
printf '{"version":1,"name":"x","secret_file":"s","peers":[{"id":0,"host":"a","port":1},{"id":0,"host":"b","port":2}]}' \
	> "$C/fuzz_cluster/duplicate-id.json"
printf '{\n  "version": 1,\n  "name": "x",\n  oops\n}\n' > "$C/fuzz_cluster/syntax-error.json"

for i in 0 1; do
	"$B/src/server/rdmapoold" -c "$T/cluster.json" --id $i --size 16M --backing-file "$T/p$i" \
		--pid-file "$T/p$i.pid" --log-file "$T/p$i.log"
done
"$B/src/tools/rdmapool" mkfs -c "$T/cluster.json" --volume seed --replicas 2 > /dev/null
kill "$(cat "$T/p0.pid")" "$(cat "$T/p1.pid")"
sleep 0.5
# selector byte (fuzz_home.c): 0 superblock, 1 volume record, 2 placement
{ printf '\x00'; head -c 4096 "$T/p0"; } > "$C/fuzz_home/superblock"
# slot 0's two copies of its volume record (volume.c: at 64 and 288)
for c in 0 1; do
	{ printf '\x01'; dd if="$T/p0" bs=1 skip=$((4096 + 64 + c * 224)) count=148 status=none; } > "$C/fuzz_home/volume-record-$c"
done
{ printf '\x02'; dd if="$T/p0" bs=1 skip=$((4096 + 32768)) count=128 status=none; } > "$C/fuzz_home/placement"

# replay (fuzz_replay.c): selector 0, then type flags len16 payload chunks
rec() { printf "\\x$(printf %02x "$1")\\x$(printf %02x "$2")"; printf "%04x" "$3" | sed 's/\(..\)\(..\)/\\x\2\\x\1/' | xargs -0 printf; }
le() { local v=$1 n=$2 i; for ((i = 0; i < n; i++)); do printf "\\x$(printf %02x $((v & 255)))"; v=$((v >> 8)); done; }
attr() { le "$1" 8; le "$2" 4; le 0 4; le 0 4; le 1 4; le "$3" 8; le 0 8; le 1 8; le 0 36; }
{
	printf '\x00'
	rec 1 0 84; attr 1 $((0040755)) 0
	rec 1 0 84; attr 2 $((0100644)) 16384
	rec 2 0 19; le 1 8; le 2 8; le 1 2; printf a
	rec 4 0 32; le 2 8; le 0 8; le 1 4; le 4 4; le 100 8
	rec 6 0 21; le 2 8; le 4 2; le 3 4; printf 'user'; printf 'v\0w'
	rec 5 0 24; le 2 8; le 1 8; le 2 8
	rec 3 0 11; le 1 8; le 1 2; printf a
	rec 9 1 8; le 2 8
} > "$C/fuzz_replay/file-lifecycle"
# the record naming the log's spare segment (type 15), then the root
{ printf '\x00'; rec 15 0 16; le 1 4; le 64 4; le 128 8; rec 1 0 84; attr 1 $((0040755)) 0; } \
	> "$C/fuzz_replay/spare-named"
# a name left to an inode the records deleted: fsck's name check crashed on it
{
	printf '\x00'
	rec 1 0 84; attr 1 $((0040755)) 0
	rec 1 0 84; attr 2 $((0100644)) 0
	rec 2 0 19; le 1 8; le 2 8; le 1 2; printf a
	rec 9 1 8; le 2 8
} > "$C/fuzz_replay/regress-fsck-name-of-deleted-inode"
{
	printf '\x00'
	rec 1 0 84; attr 1 $((0040755)) 0
	rec 1 0 84; attr 3 $((0120777)) 6
	rec 8 0 16; le 3 8; le 6 2; printf 'target'
	rec 11 0 8; le 9 8
	rec 12 1 20; le 1 4; printf 'sixteen-byte-uid'
} > "$C/fuzz_replay/symlink-pool"
echo "seeds in $C"

# fuzz_rdma_private: commands (see the target): a HELLO, its right AUTH,
# the same again (used up), one for another peer, one with a wrong MAC, the
# clock past the challenges' life, a challenge reject and an accept
R="$C/fuzz_rdma_private"
mkdir -p "$R"
hello='\x00\x38\x52\x50\x52\x51\x03\x00\x01\x00\x07\x00\x00\x00\x00\x00\x00\x00'
hello+='\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10'
hello+='\x11\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
printf "$hello"'\x01\x00\x00\x01\x00\x00' > "$R/hello-auth-again.bin"
printf "$hello$hello"'\x01\x01\x01\x01\x00\x81\x01\x01\x00' > "$R/other-peer-bad-mac.bin"
printf "$hello"'\x02\xff\x02\xff\x01\x00\x00' > "$R/expired.bin"
# a full table (the target's holds 8): the ninth HELLO refused, the first
# answer still accepted, its entry taken again, and after 1 s the oldest
# giving way
printf "$hello$hello$hello$hello$hello$hello$hello$hello$hello"'\x01\x00\x00'"$hello"'\x02\x04'"$hello"'\x01\x01\x00\x01\x09\x00' > "$R/full-table.bin"
printf '\x03\x1c\x52\x50\x52\x50\x03\x00\x00\x00\x01\x00\x00\x00' > "$R/reject.bin"
printf 'abcdefghijklmnop' >> "$R/reject.bin"
{ printf '\x04\x58\x52\x50\x52\x50\x03\x00\x00\x00\x00\x00\x00\x00'; head -c 76 /dev/zero; } > "$R/accept.bin"
