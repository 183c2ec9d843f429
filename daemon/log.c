#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tandemd.h"

static int	verbose;
static int	journal;

void
log_init(int v)
{
	verbose = v;
	/* journald stamps lines itself; a terminal wants the time. */
	journal = getenv("JOURNAL_STREAM") != NULL;
}

static void
vlog(int prio, const char *level, const char *fmt, va_list ap)
{
	char ts[32], *raw, *clean;
	struct timespec now;
	struct tm tm;
	va_list aq;
	int n;

	if (journal)
		fprintf(stderr, "<%d>", prio);
	else {
		clock_gettime(CLOCK_REALTIME, &now);
		gmtime_r(&now.tv_sec, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ldZ %s ", ts, now.tv_nsec / 1000000,
		    level);
	}
	/*
	 * Messages carry node output: the log stays UTF-8 (a journal viewer
	 * shows a non-UTF-8 line as a blob) and without terminal escapes.
	 */
	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n >= 0) {
		raw = xmalloc((size_t)n + 1);
		vsnprintf(raw, (size_t)n + 1, fmt, ap);
		clean = xmalloc((size_t)n * 3 + 1);
		utf8_copyn(clean, (size_t)n * 3 + 1, raw, (size_t)n);
		fputs(clean, stderr);
		free(clean);
		free(raw);
	}
	fputc('\n', stderr);
	fflush(stderr);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(6, "info", fmt, ap);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(4, "warn", fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	vlog(7, "debug", fmt, ap);
	va_end(ap);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(2, "fatal", fmt, ap);
	va_end(ap);
	exit(1);
}

double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
