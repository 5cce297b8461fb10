#!/bin/bash
# The fuzz targets over their corpus in the tree (seeds, and inputs that
# once crashed them, kept as regression inputs): no crash, no sanitizer
# report, no broken property. TAP output, one line per target.
: "${top_builddir:=.}" "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
n=0
fail=0
targets=(fuzz_cluster fuzz_replay fuzz_home fuzz_tcp_request fuzz_rdma_private)
echo "1..${#targets[@]}"
for t in "${targets[@]}"; do
	n=$((n + 1))
	if out=$("$top_builddir/tests/fuzz/$t" -runs=0 "$top_srcdir/tests/fuzz/corpus/$t" 2>&1); then
		echo "ok $n - $t: $out"
	else
		echo "not ok $n - $t"
		printf '%s\n' "$out" | tail -n 30 | sed 's/^/# /'
		fail=1
	fi
done
exit $fail
