#!/bin/bash
# Build rdmapool with warnings as errors and run its test suite.
# Usage: scripts/run-tests.sh   (as root: the tests mount FUSE filesystems)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
./autogen.sh > /dev/null
mkdir -p _build
cd _build
../configure CFLAGS="-O2 -g -Werror" > configure.log || { cat configure.log; exit 1; }
make -j"$(nproc)"
# The harness runs tests in parallel; each test prints TAP and the summary
# ends with the totals.
if ! make -j2 check; then
	cat test-suite.log
	exit 1
fi
