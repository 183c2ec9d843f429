/*
 * The log: a terminal (or a file) gets a timestamped line; systemd's
 * journal gets a native entry whose fields journalctl can filter on
 * (journalctl -u tandemd TANDEM_NODE=node2, MESSAGE_ID=...): see
 * docs/operations.md.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* every entry would say CODE_FILE=daemon/sys/log.c: nothing to filter on */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-id128.h>
#include <systemd/sd-journal.h>

#include "log.h"
#include "secret.h"

/* Fixed for ever: operators' queries and alerts name them. */
#define MSGID_TRANSITION SD_ID128_MAKE_STR(ee,27,6f,fc,30,06,4b,71,b2,d1,b5,70,7c,bf,c5,bb)
#define MSGID_DIAGNOSIS	 SD_ID128_MAKE_STR(bf,d8,75,44,77,a8,4b,90,89,87,42,b4,75,e4,e4,b1)

#define NFIELDS		12

static int	verbose;
static int	journal;	/* stderr is a journal stream: native entries */
#define NSECRETS	8
static char	*secrets[NSECRETS];	/* log_secret's, newest first */

/* What every entry says of the cluster, as of its last change. */
static struct {
	char		cluster[64];
	char		state[32];
	char		action[32];
	long long	generation;
} ctx = { .generation = -1 };

/*
 * JOURNAL_STREAM is inherited: it names the journal only while stderr
 * is still the stream systemd connected (not when stderr was redirected
 * to a file by someone we were started from), sd_journal_stream_fd(3).
 */
static int
stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (e == NULL || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return 0;
	if (fstat(STDERR_FILENO, &st) == -1)
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino;
}

void
log_init(int v)
{
	verbose = v;
	journal = stderr_is_journal();
}

void
log_context(const char *cluster, const char *state, const char *action,
    unsigned long long generation)
{
	utf8_copy(ctx.cluster, sizeof(ctx.cluster), cluster);
	utf8_copy(ctx.state, sizeof(ctx.state), state);
	utf8_copy(ctx.action, sizeof(ctx.action), action);
	ctx.generation = (long long)generation;
}

static void
add(struct iovec *iov, int *n, char *buf, size_t len, const char *name,
    const char *val)
{
	if (val == NULL || *val == '\0' || *n >= NFIELDS)
		return;
	snprintf(buf, len, "%s=%s", name, val);
	iov[*n].iov_base = buf;
	iov[*n].iov_len = strlen(buf);
	(*n)++;
}

/* 0 when journald has the entry; else the caller writes to stderr. */
static int
send_journal(int prio, const struct log_fields *f, const char *msg)
{
	char b[NFIELDS][128], gen[24], pr[4], *m;
	struct iovec iov[NFIELDS + 1];
	size_t mlen = strlen(msg) + sizeof("MESSAGE=");
	int n = 0, rc;

	m = xmalloc(mlen);
	snprintf(m, mlen, "MESSAGE=%s", msg);
	iov[n].iov_base = m;
	iov[n++].iov_len = strlen(m);
	snprintf(pr, sizeof(pr), "%d", prio);
	add(iov, &n, b[n], sizeof(b[0]), "PRIORITY", pr);
	add(iov, &n, b[n], sizeof(b[0]), "SYSLOG_IDENTIFIER", "tandemd");
	add(iov, &n, b[n], sizeof(b[0]), "TANDEM_CLUSTER", ctx.cluster);
	add(iov, &n, b[n], sizeof(b[0]), "TANDEM_STATE",
	    f && f->state ? f->state : ctx.state);
	add(iov, &n, b[n], sizeof(b[0]), "TANDEM_ACTION",
	    f && f->action ? f->action : ctx.action);
	if (f && f->generation >= 0)
		snprintf(gen, sizeof(gen), "%lld", f->generation);
	else if (ctx.generation >= 0)
		snprintf(gen, sizeof(gen), "%lld", ctx.generation);
	else
		gen[0] = '\0';
	add(iov, &n, b[n], sizeof(b[0]), "TANDEM_GENERATION", gen);
	if (f) {
		add(iov, &n, b[n], sizeof(b[0]), "TANDEM_NODE", f->node);
		add(iov, &n, b[n], sizeof(b[0]), "TANDEM_DIAGNOSIS",
		    f->diagnosis);
		add(iov, &n, b[n], sizeof(b[0]), "MESSAGE_ID",
		    f->msg == LOG_TRANSITION ? MSGID_TRANSITION :
		    f->msg == LOG_DIAGNOSIS ? MSGID_DIAGNOSIS : NULL);
	}
	rc = sd_journal_sendv(iov, n);
	free(m);
	return rc < 0 ? -1 : 0;
}

void
log_secret(const char *s)
{
	size_t i;

	if (s == NULL || *s == '\0')
		return;
	for (i = 0; i < NSECRETS && secrets[i]; i++)
		if (strcmp(secrets[i], s) == 0)
			return;
	free(secrets[NSECRETS - 1]);
	memmove(secrets + 1, secrets, (NSECRETS - 1) * sizeof(*secrets));
	secrets[0] = xstrdup(s);
}

char *
log_mask_n(const char *text, size_t len, size_t *outlen)
{
	char *out = xmalloc(len + 1), *next;
	size_t i;

	memcpy(out, text, len);
	out[len] = '\0';
	*outlen = len;
	for (i = 0; i < NSECRETS && secrets[i]; i++) {
		next = secret_masked_n(out, *outlen, secrets[i], outlen);
		free(out);
		out = next;
	}
	return out;
}

char *
log_mask(const char *text)
{
	size_t n;

	return log_mask_n(text ? text : "", text ? strlen(text) : 0, &n);
}

static void
vlog(int prio, const struct log_fields *f, const char *fmt, va_list ap)
{
	static const char *level[] = { "emerg", "alert", "fatal", "error",
	    "warn", "notice", "info", "debug" };
	char ts[32], *raw, *clean;
	struct timespec now;
	struct tm tm;
	va_list aq;
	int n;

	/*
	 * Messages carry node output: the log stays UTF-8 (a journal viewer
	 * shows a non-UTF-8 line as a blob) and without terminal escapes.
	 */
	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return;
	raw = xmalloc((size_t)n + 1);
	vsnprintf(raw, (size_t)n + 1, fmt, ap);
	clean = xmalloc((size_t)n * 3 + 1);
	utf8_copyn(clean, (size_t)n * 3 + 1, raw, (size_t)n);
	free(raw);
	if (secrets[0]) {
		raw = clean;
		clean = log_mask(raw);
		free(raw);
	}
	if (journal && send_journal(prio, f, clean) == 0) {
		free(clean);
		return;
	}
	if (journal)
		/* journald stamps lines itself */
		fprintf(stderr, "<%d>", prio);
	else {
		clock_gettime(CLOCK_REALTIME, &now);
		gmtime_r(&now.tv_sec, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ldZ %s ", ts, now.tv_nsec / 1000000,
		    level[prio & 7]);
	}
	fputs(clean, stderr);
	fputc('\n', stderr);
	fflush(stderr);
	free(clean);
}

void
log_fields(int prio, const struct log_fields *f, const char *fmt, ...)
{
	va_list ap;

	if (prio == LOG_DEBUG && !verbose)
		return;
	va_start(ap, fmt);
	vlog(prio, f, fmt, ap);
	va_end(ap);
}

void
log_node(int prio, const char *node, const char *fmt, ...)
{
	struct log_fields f = { .node = node, .generation = -1 };
	va_list ap;

	if (prio == LOG_DEBUG && !verbose)
		return;
	va_start(ap, fmt);
	vlog(prio, &f, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_INFO, NULL, fmt, ap);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_WARNING, NULL, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	vlog(LOG_DEBUG, NULL, fmt, ap);
	va_end(ap);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, NULL, fmt, ap);
	va_end(ap);
	exit(1);
}
