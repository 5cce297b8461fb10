/* Levelled logging: stderr by default, syslog for daemons that ask for it. */
#include "config.h"
#include <rdmapool/log.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>

static const char *log_ident = "rdmapool";
static enum rp_log_level log_level = RP_LOG_INFO;
static int log_syslog;

void rp_log_init(const char *ident, enum rp_log_level level, int use_syslog)
{
	log_ident = ident;
	log_level = level;
	log_syslog = use_syslog;
	if (use_syslog)
		openlog(ident, LOG_PID, LOG_DAEMON);
}

void rp_log_set_level(enum rp_log_level level)
{
	log_level = level;
}

int rp_log_parse_level(const char *s, enum rp_log_level *out)
{
	static const char *names[] = { "error", "warn", "info", "debug" };
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcasecmp(s, names[i]) == 0) {
			*out = (enum rp_log_level)i;
			return 0;
		}
	}
	return -1;
}

void rp_log(enum rp_log_level level, const char *fmt, ...)
{
	static const char *tags[] = { "error", "warning", "info", "debug" };
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	if (log_syslog) {
		vsyslog(prio[level], fmt, ap);
	} else {
		char msg[1024];
		vsnprintf(msg, sizeof(msg), fmt, ap);
		/* One fprintf so lines from several threads do not interleave. */
		fprintf(stderr, "%s: %s: %s\n", log_ident, tags[level], msg);
	}
	va_end(ap);
}
