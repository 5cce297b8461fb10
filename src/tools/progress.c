/* Progress of long admin work for people: a bar redrawn on stderr when it
 * is a terminal (done, total, rate, time left), else a plain line every few
 * seconds; Ctrl-C asks the work to stop at its next safe point (a second
 * one kills). Output the work prints meanwhile goes through
 * tool_progress_out(), which clears the bar first so lines do not mix. */
#include "config.h"
#include "tool.h"

#include <rdmapool/progress.h>
#include <rdmapool/util.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DRAW_MS 100
#define LINE_MS 5000
#define BAR 28

static struct {
	struct rp_progress base;
	bool tty, drawn;
	bool lined; /* not a terminal: a line was printed (work that is quick prints none) */
	uint64_t t0, last;
	char what[40];
	uint64_t done, total;
	uint32_t unit;
	FILE *out;
} g;

static void amount(uint64_t n, uint32_t unit, char *buf, size_t len)
{
	if (unit)
		rp_format_size(n * unit, buf, len);
	else
		snprintf(buf, len, "%llu", (unsigned long long)n);
}

static void clear_bar(void)
{
	if (g.drawn) {
		fputs("\r\033[K", stderr);
		g.drawn = false;
	}
}

static void draw(bool final)
{
	double secs = (double)(rp_now_ms() - g.t0) / 1000.0;
	double frac = g.total ? (double)g.done / (double)g.total : 1.0;
	if (frac > 1)
		frac = 1;
	char d[32], t[32], rate[40] = "", eta[32] = "";
	amount(g.done, g.unit, d, sizeof(d));
	amount(g.total, g.unit, t, sizeof(t));
	if (secs > 0.5 && g.done) {
		char r[32];
		amount((uint64_t)((double)g.done / secs), g.unit, r, sizeof(r));
		snprintf(rate, sizeof(rate), ", %s/s", r);
		if (!final && frac < 1) {
			double left = secs * (1 - frac) / frac;
			snprintf(eta, sizeof(eta), ", %.0f s left", left);
		}
	}
	if (g.tty) {
		char bar[BAR + 1];
		int full = (int)(frac * BAR);
		for (int i = 0; i < BAR; i++)
			bar[i] = i < full ? '#' : i == full ? '>' : ' ';
		bar[BAR] = '\0';
		fprintf(stderr, "\r\033[K%s [%s] %3.0f%% %s of %s%s%s", g.what, bar, frac * 100, d, t,
			rate, eta);
		g.drawn = true;
		if (final) {
			fputc('\n', stderr);
			g.drawn = false;
		}
	} else {
		fprintf(stderr, "%s: %.0f%% (%s of %s)%s%s\n", g.what, frac * 100, d, t, rate, eta);
		g.lined = true;
	}
	fflush(stderr);
}

static void report(struct rp_progress *p, const char *what, uint64_t done, uint64_t total,
		   uint32_t unit)
{
	(void)p;
	uint64_t now = rp_now_ms();
	if (strcmp(what, g.what) != 0) {
		if (g.what[0] && g.done && (g.tty || g.lined))
			draw(true); /* the step that ended, as far as it got */
		snprintf(g.what, sizeof(g.what), "%s", what);
		g.t0 = g.last = now;
		g.lined = false;
	}
	g.done = done;
	g.total = total;
	g.unit = unit;
	if (now - g.last >= (g.tty ? DRAW_MS : LINE_MS)) {
		g.last = now;
		draw(false);
	}
}

static void on_signal(int sig)
{
	atomic_store(&g.base.stop, true);
	signal(sig, SIG_DFL); /* a second one stops at once */
}

/* Lines the work prints: the bar goes first, and comes back with the next
 * report. */
static ssize_t out_write(void *cookie, const char *buf, size_t len)
{
	(void)cookie;
	clear_bar();
	size_t n = fwrite(buf, 1, len, stdout);
	fflush(stdout);
	return (ssize_t)n;
}

struct rp_progress *tool_progress_start(void)
{
	memset(&g, 0, sizeof(g));
	g.base.report = report;
	atomic_init(&g.base.stop, false);
	g.tty = isatty(STDERR_FILENO);
	g.t0 = rp_now_ms();
	cookie_io_functions_t io = { .write = out_write };
	g.out = fopencookie(NULL, "w", io);
	if (g.out)
		setvbuf(g.out, NULL, _IOLBF, 0);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	return &g.base;
}

FILE *tool_progress_out(void)
{
	return g.out ? g.out : stdout;
}

bool tool_progress_end(void)
{
	if (g.what[0] && g.done && (g.tty || g.lined))
		draw(true);
	clear_bar();
	if (g.out)
		fclose(g.out);
	g.out = NULL;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return atomic_load(&g.base.stop);
}
