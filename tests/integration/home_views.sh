#!/bin/bash
# The home area's copies: which are in sync is read from the copies, not
# kept per process (issue 17, defect 3). Three real pool servers; the
# helper holds two processes' views of them (tests/helpers/home_views.c).
# Before the fix a view kept "out of sync" from a look taken while a drop
# was half done, and from before another process resynced a copy, and its
# writes then skipped copies every other process reads.
. "$(dirname "$0")/lib.sh"

make_cluster 3
for i in 0 1 2; do start_pool "$i" 16M || bail "pool $i did not start"; done
"$HELPERS/home_views" "$CLUSTER" > "$T/views.out" 2>&1
rc=$?
sed 's/^/# /' "$T/views.out"
is "the helper ran to the end" "$rc" "0"
grep -q '^ok: an in-sync copy a half-done drop showed behind got the write$' "$T/views.out" &&
	ok "a copy seen behind during a drop, in sync after it, gets the writes" ||
	not_ok "a copy seen behind during a drop, in sync after it, gets the writes"
grep -q '^ok: the dropped copy did not$' "$T/views.out" &&
	ok "the dropped copy gets no writes" || not_ok "the dropped copy gets no writes"
grep -q '^ok: a copy another process resynced gets the next write$' "$T/views.out" &&
	ok "a copy resynced by another process gets the writes" ||
	not_ok "a copy resynced by another process gets the writes"
grep -q '^ok: every in-sync copy holds the last write$' "$T/views.out" &&
	ok "every in-sync copy holds the last write" || not_ok "every in-sync copy holds the last write"
done_testing
