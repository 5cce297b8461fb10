#!/bin/bash
# make check's way into the fstests: the quick group, reported as TAP.
if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP the fstests mount FUSE filesystems and run as another user: run as root"
	exit 0
fi
exec "$(dirname "$0")/check" --tap -g quick
