#!/bin/bash
# make check's way into the fstests: the quick group, reported as TAP, in
# two shards that make -j2 runs side by side (quick1.sh and quick2.sh, the
# same script: the shard is in its name). The tests mostly wait (mounts,
# timeouts, pool restarts), so two at once halve the time without crowding
# two CPUs; each test has its own ports, directories and nft table.
if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP the fstests mount FUSE filesystems and run as another user: run as root"
	exit 0
fi
name=$(basename "$0" .sh)
exec "$(dirname "$0")/check" --tap -g quick --shard "${name#quick}/2"
