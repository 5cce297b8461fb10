#!/bin/sh
# One fuzz target for a fixed time, from the corpus in the tree and the
# inputs it found before (make check-fuzz runs FUZZ_JOBS of these at a
# time). New inputs go to fuzz-work/NAME/corpus, crashes to
# fuzz-work/NAME/crash-*: add them to the corpus once fixed.
# Usage: run-fuzzer.sh SECONDS CORPUS_DIR FUZZER
seconds=$1 corpus=$2 fuzzer=$3
n=${fuzzer##*/}
mkdir -p "fuzz-work/$n/corpus" || exit 1
status=0
"./$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix="fuzz-work/$n/" "fuzz-work/$n/corpus" "$corpus/$n" \
	> "fuzz-work/$n.log" 2>&1 || status=1
# one write per fuzzer, so that two side by side do not mix their lines
{
	echo "=== $n for $seconds s$([ $status = 0 ] || echo ': FAILED')"
	[ $status = 0 ] || tail -n 60 "fuzz-work/$n.log"
	grep -E '^stat::(number_of_executed_units|new_units_added)|^Done' "fuzz-work/$n.log"
} > "fuzz-work/$n.summary"
cat "fuzz-work/$n.summary"
exit $status
