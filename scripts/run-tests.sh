#!/bin/bash
# Build rdmapool with warnings as errors and run the whole test suite:
# unit and integration tests and the quick fstests (make check), the other
# fstests groups (make check-fstests), and the rdma transport for real in a
# Soft-RoCE VM (make check-rdma).
# Usage: sudo scripts/run-tests.sh   (root: the tests mount FUSE filesystems)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --test
./autogen.sh > /dev/null
mkdir -p _build
cd _build
../configure CFLAGS="-O2 -g -Werror" > configure.log || { cat configure.log; exit 1; }
make -j"$(nproc)"
status=0
make -j2 check || { cat test-suite.log; status=1; }
make check-fstests || status=1
if grep -q '^check-rdma:' Makefile; then
	make check-rdma || status=1
fi
exit $status
