/* Levelled logging to stderr or syslog, shared by every program. */
#ifndef RDMAPOOL_LOG_H
#define RDMAPOOL_LOG_H

enum rp_log_level { RP_LOG_ERR = 0, RP_LOG_WARN, RP_LOG_INFO, RP_LOG_DEBUG };

void rp_log_init(const char *ident, enum rp_log_level level, int use_syslog);
void rp_log_set_level(enum rp_log_level level);
int rp_log_parse_level(const char *s, enum rp_log_level *out);
void rp_log(enum rp_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define rp_err(...) rp_log(RP_LOG_ERR, __VA_ARGS__)
#define rp_warn(...) rp_log(RP_LOG_WARN, __VA_ARGS__)
#define rp_info(...) rp_log(RP_LOG_INFO, __VA_ARGS__)
#define rp_debug(...) rp_log(RP_LOG_DEBUG, __VA_ARGS__)

#endif
