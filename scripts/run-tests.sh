#!/bin/bash
# Build rdmapool with warnings as errors and run the whole test suite:
# unit and integration tests and the quick fstests (make check), the other
# fstests groups (make check-fstests, the nemesis among them), make
# distcheck, the Debian package built, checked with lintian, installed and
# used (scripts/test-package.sh), the rdma transport for real in a Soft-RoCE
# VM (make check-rdma), make check again under ASan and UBSan (make
# check-sanitizers), the concurrency-heavy fstests under TSan (make
# check-tsan), and each fuzz target for 30 s, two at a time (make check-fuzz).
# Usage: sudo scripts/run-tests.sh   (root: the tests mount FUSE filesystems)
set -euo pipefail
cd "$(dirname "$0")/.."

# how long each stage took, printed last (CI's time is bounded)
times=() t_stage=$SECONDS
timed() { times+=("$(printf '%5d s  %s' $((SECONDS - t_stage)) "$1")"); t_stage=$SECONDS; }

scripts/install-deps.sh --test
./autogen.sh > /dev/null
mkdir -p _build
cd _build
../configure CFLAGS="-O2 -g -Werror" > configure.log || { cat configure.log; exit 1; }
make -j"$(nproc)"
timed build
status=0
failed=()
make -j2 check || { cat test-suite.log; status=1; failed+=(check); }
timed "make check"
make check-fstests > check-fstests.log 2>&1 || { status=1; failed+=(check-fstests); }
cat check-fstests.log
timed check-fstests
# the tarball builds and tests out of tree; the Debian package installs and
# works as users get it (quick start, mounts, against /usr/sbin)
make distcheck-tests > distcheck.log 2>&1 || { tail -n 80 distcheck.log; status=1; failed+=(distcheck); }
grep -E '^(# (TOTAL|PASS|FAIL|ERROR):|rdmapool-.* archives ready)' distcheck.log || true
timed distcheck
../scripts/test-package.sh "$(pwd)" || { status=1; failed+=(package); }
timed package
if grep -q '^check-rdma:' Makefile; then
	make check-rdma || { status=1; failed+=(check-rdma); }
	timed check-rdma
fi
cd ..

# make check again with ASan and UBSan: any report fails it
mkdir -p _build-asan
(cd _build-asan && ../configure --enable-sanitizers CFLAGS="-O1 -g -Werror" > configure.log &&
	make -j"$(nproc)" > make.log && make -j2 check-sanitizers) || { status=1; failed+=(sanitizers); }
timed "ASan and UBSan"
# the concurrency-heavy fstests with TSan: any report fails them
mkdir -p _build-tsan
(cd _build-tsan && ../configure --enable-sanitizers=thread CFLAGS="-O1 -g -Werror" > configure.log &&
	make -j"$(nproc)" > make.log && make check-tsan > check-tsan.log 2>&1) ||
	{ status=1; failed+=(tsan); }
cat _build-tsan/check-tsan.log 2>/dev/null || true
timed TSan
# each fuzz target for 30 s from its corpus (clang's libFuzzer)
mkdir -p _build-fuzz
(cd _build-fuzz && ../configure CC=clang --enable-fuzzing CFLAGS="-O1 -g -Werror" > configure.log &&
	make -j"$(nproc)" > make.log && make check-fuzz FUZZ_SECONDS=30) || { status=1; failed+=(fuzz); }
timed fuzzing
cd _build
printf '%s\n' "${times[@]}" "$(printf '%5d s  in all' "$SECONDS")"

# What failed, again at the very end and short (a long log is often read
# by its last fifty lines only): sanitizer reports' first lines, then each
# failed test's verdict, the start of its diff and its first non-info
# lines (a nemesis's seed among them), not the pool logs' tails; the
# verdicts last, so that they are the lines kept.
if [ $status != 0 ]; then
	for f in ../_build-asan/sanitizer-reports/* ../_build-tsan/sanitizer-reports/*; do
		[ -f "$f" ] && [ "${f##*/}" != failed ] || continue
		echo "--- $f"
		grep -m 6 -E 'ERROR|WARNING|SUMMARY|runtime error|^    #[0-9] ' "$f" || head -n 4 "$f"
	done | tail -n 16 || true
	{
		for log in $(find tests ../_build-asan/tests -name '*.log' ! -name test-suite.log 2>/dev/null); do
			grep -q '^not ok' "$log" 2>/dev/null || continue
			echo "--- $log"
			# the verdict, the diff's start and the first non-info lines
			# (a randomized test's seed among them)
			awk '/^not ok/ { d = 0; x = 0; on = 1; print; next }
			     /^(ok |PASS:|ERROR:)/ { on = 0 }
			     on && /^    ! / && x++ < 4 { print; next }
			     on && /^    [^!|#]/ && d++ < 8' "$log" | head -n 24
		done
		for log in check-fstests.log ../_build-tsan/check-tsan.log; do
			grep -q '\[failed\]' "$log" 2>/dev/null || continue
			echo "--- $log"
			awk '/\[failed\]/ { d = 0; x = 0; on = 1; print; next }
			     /^[0-9][0-9][0-9] \[/ { on = 0 }
			     on && /^    ! / && x++ < 6 { print; next }
			     on && /^    [^!|#]/ && d++ < 8' "$log"
		done
	} | tail -n 30 || true
	echo "=== failed: ${failed[*]}"
fi
exit $status
