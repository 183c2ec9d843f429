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
	char ts[32];
	struct timespec now;
	struct tm tm;

	if (journal)
		fprintf(stderr, "<%d>", prio);
	else {
		clock_gettime(CLOCK_REALTIME, &now);
		gmtime_r(&now.tv_sec, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ldZ %s ", ts, now.tv_nsec / 1000000,
		    level);
	}
	vfprintf(stderr, fmt, ap);
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
