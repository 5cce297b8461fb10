#!/bin/bash
# The tests run inside the Soft-RoCE VM, over transport "rdma" only: the
# cluster files say "rdma", so there is no fallback to tcp, and status.sh
# checks that every pool really is reached over rdma. Prints one TAP stream.
#   rdma-tests.sh [all|transport|fs|nemesis]
set -u
: "${top_builddir:?}" "${top_srcdir:?}"
export RP_TEST_TRANSPORT=rdma RP_TEST_HOST=10.0.0.2
export FSTESTS_TRANSPORT=rdma FSTESTS_HOST=10.0.0.2
export TEST_TIMEOUT=${TEST_TIMEOUT:-180} TMPDIR=${TMPDIR:-/run/rp-tmp} POOL_SIZE=${POOL_SIZE:-128M}
export RESULTS=$TMPDIR/fstests-results CRASH_ITERATIONS=${CRASH_ITERATIONS:-2}
# the full-volume test on smaller pools: under emulation every byte is slow
export FULL_POOL_SIZE=${FULL_POOL_SIZE:-48M} FULL_TREE_DIRS=${FULL_TREE_DIRS:-4}
mkdir -p "$RESULTS"
which=${1:-all}
n=0
failed=0

# run_tap LABEL CMD...: run a TAP-producing command and renumber its lines.
run_tap() {
	local label=$1 out=$TMPDIR/tap.$$ rc line seen=0
	shift
	echo "# running $label" > /dev/console 2>/dev/null || true
	local t0=$(date +%s)
	"$@" > "$out" 2>&1
	rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok "*|"not ok "*)
			seen=1
			n=$((n + 1))
			local verdict=${line%% [0-9]*} rest
			rest=$(echo "$line" | sed -E 's/^(not )?ok [0-9]+ ?-? ?//')
			[ "$verdict" = "not ok" ] && failed=$((failed + 1))
			echo "$verdict $n - $label: $rest"
			;;
		"Bail out!"*)
			n=$((n + 1)); failed=$((failed + 1)); seen=1
			echo "not ok $n - $label: ${line#Bail out! }"
			;;
		"#"*) echo "$line" ;;
		esac
	done < "$out"
	if [ $rc != 0 ] && [ $seen = 0 ]; then
		n=$((n + 1)); failed=$((failed + 1))
		echo "not ok $n - $label: exited $rc without results"
		sed 's/^/# /' "$out" | tail -n 20
	elif [ $rc != 0 ]; then
		grep -v -e '^ok' -e '^not ok' -e ' info: ' -e '^    | ---' "$out" | sed 's/^/# /' | tail -n 60
	fi
	echo "# $label took $(( $(date +%s) - t0 ))s"
	rm -f "$out"
}

echo "# ibv_devices:"; ibv_devices 2>&1 | sed 's/^/#   /'
if [ "$which" = all ] || [ "$which" = transport ]; then
	for t in status tcp_io atomics refusals alloc_concurrent alloc_full server_death backing_file; do
		run_tap "$t" bash "$top_srcdir/tests/integration/$t.sh"
	done
fi
if [ "$which" = all ] || [ "$which" = fs ]; then
	run_tap fstests bash "$top_srcdir/tests/fstests/check" --tap ${VM_FSTESTS:-001 011 012 016 030 035 037 041 044 049 050 074}
fi
# the nemesis over rdma: its pool, daemon, contender and rebuild faults
# (network faults cannot reach RoCE here, fstest 062 says why); short, as
# everything is slow under emulation
if [ "$which" = all ] || [ "$which" = fs ] || [ "$which" = nemesis ]; then
	# (NEMESIS_SEED and VM_NEMESIS_SECONDS come through the kernel's command line)
	[ -n "${rp_nemesis_seed:-}" ] && export NEMESIS_SEED=$rp_nemesis_seed
	run_tap nemesis env NEMESIS_SECONDS="${rp_nemesis_secs:-30}" \
		TEST_TIMEOUT=1200 bash "$top_srcdir/tests/fstests/check" --tap 062
	# what it did: seed, faults by kind, each writer's and the follower's counts
	grep -E 'nemesis seed|^(writer|follower|check)[ :]' "$RESULTS/062.full" 2>/dev/null | sed 's/^/# nemesis: /'
	sed -n 's/^t=[0-9]* fault [0-9]*: //p' "$RESULTS/062.full" 2>/dev/null |
		sed -E 's/[0-9]+ ms/N ms/g; s/peer [0-9]+/peer P/g' | sort | uniq -c | sed 's/^/# nemesis fault: /'
fi
echo "1..$n"
[ $failed = 0 ]
