/* The lock-order checker (--enable-lock-check): each thread keeps the locks
 * it holds, with where it took them; taking one that does not rank above
 * every lock held is reported with both sites, then the process aborts (as
 * a sanitizer report does). RP_LOCK_CHECK_LOG=PREFIX writes reports to
 * PREFIX.PID instead of stderr (daemons have none); RP_LOCK_CHECK=warn
 * reports each pair of sites once and goes on, to survey an order. */
#ifdef RP_LOCK_CHECK
#include <rdmapool/lock_order.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_HELD 32

struct held {
	const void *lk;
	enum rp_lock_rank r;
	const char *name, *file;
	int line;
};

static _Thread_local struct held held[MAX_HELD];
static _Thread_local int nheld;
static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER; /* unchecked: a leaf */

static FILE *report_file(void)
{
	static FILE *f;
	if (f)
		return f;
	const char *prefix = getenv("RP_LOCK_CHECK_LOG");
	if (prefix && *prefix) {
		char path[4096];
		snprintf(path, sizeof(path), "%s.%d", prefix, (int)getpid());
		f = fopen(path, "a");
	}
	if (!f)
		f = stderr;
	return f;
}

/* warn mode: a pair of sites reported before is not again */
static bool seen_before(const struct held *h, const char *file, int line)
{
	static struct site_pair {
		const char *f1, *f2;
		int l1, l2;
	} seen[256];
	static int nseen;
	for (int i = 0; i < nseen; i++)
		if (seen[i].l1 == h->line && seen[i].l2 == line && strcmp(seen[i].f1, h->file) == 0 &&
		    strcmp(seen[i].f2, file) == 0)
			return true;
	if (nseen < 256)
		seen[nseen++] = (struct site_pair){ h->file, file, h->line, line };
	return false;
}

static void report(const struct held *h, enum rp_lock_rank r, const char *name, const char *file,
		   int line)
{
	const char *mode = getenv("RP_LOCK_CHECK");
	bool warn = mode && strcmp(mode, "warn") == 0;
	pthread_mutex_lock(&report_mu);
	if (!warn || !seen_before(h, file, line)) {
		FILE *f = report_file();
		fprintf(f, "lock order: %s (rank %d) taken at %s:%d while holding %s (rank %d) "
			   "taken at %s:%d\n",
			name, (int)r, file, line, h->name, (int)h->r, h->file, h->line);
		for (int i = 0; i < nheld && i < MAX_HELD; i++)
			fprintf(f, "  held: %s (rank %d) from %s:%d\n", held[i].name, (int)held[i].r,
				held[i].file, held[i].line);
		fflush(f);
	}
	pthread_mutex_unlock(&report_mu);
	if (!warn)
		abort();
}

void rp_lock_check(const void *lk, enum rp_lock_rank r, const char *name, const char *file,
		   int line)
{
	(void)lk;
	if (nheld >= MAX_HELD) { /* more than any order has: a leak of held locks */
		struct held h = { lk, r, "(more than 32 locks held)", file, line };
		report(&h, r, name, file, line);
		return;
	}
	for (int i = 0; i < nheld; i++)
		if (held[i].r >= r) {
			report(&held[i], r, name, file, line);
			return;
		}
}

void rp_lock_note(const void *lk, enum rp_lock_rank r, const char *name, const char *file,
		  int line)
{
	if (nheld < MAX_HELD)
		held[nheld] = (struct held){ lk, r, name, file, line };
	nheld++; /* past MAX_HELD only counted: forget() pops what it can */
}

void rp_lock_forget(const void *lk)
{
	int top = nheld < MAX_HELD ? nheld : MAX_HELD;
	for (int i = top; i-- > 0;)
		if (held[i].lk == lk) {
			memmove(&held[i], &held[i + 1], (size_t)(top - i - 1) * sizeof(held[0]));
			nheld--;
			return;
		}
	if (nheld > MAX_HELD)
		nheld--;
}
#else
/* ISO C forbids an empty translation unit */
typedef int rp_lock_order_unused;
#endif
