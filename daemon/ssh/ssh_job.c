/*
 * A command on the session is a job with a small machine of its own (as
 * tmux's job.c): open a channel, exec, read stdout and stderr (a stream's
 * stdout line by line as it comes), close, wait for the close, read the
 * exit status, free. Each step is retried with the same arguments after
 * LIBSSH2_ERROR_EAGAIN; the session (ssh_session.c) runs the jobs whenever the
 * socket or a deadline wakes it, and reports the finished ones only when
 * it is consistent again.
 *
 * Deadlines: opening and exec each get connect_timeout_s (sshd answers
 * them at once when it can; one that cannot is stuck, and the session is
 * given up); a command its own timeout, counted from its turn for a
 * channel (queue_moves), after which it is reported as timed out at once
 * and its channel closed in the background (the wrapper below then kills
 * it on the node).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linebuf.h"
#include "quote.h"
#include "ssh_int.h"
#include "log.h"

#define OUTPUT_CAP	(1024 * 1024)	/* a command's output; a stream's line */

/*
 * What a turn of the loop reads: at most JOB_TURN_BYTES of a job's
 * channel and SESSION_TURN_BYTES of the whole session, then the loop goes
 * on to its other handles (the API, the other nodes, the watchdog) and the
 * rest is read at its next turn (jobs_run's unread). A node that prints
 * without pause (a `docker events` flood) kept the old read loop, which
 * read until libssh2 said EAGAIN, busy for seconds: watchdog gaps of up to
 * 9 s, /healthz unanswered, a healthy head node's channel open timed out.
 * 64 KiB is some 750 events lines (86 bytes each with a full ID);
 * libssh2 holds the rest (at most its receive window, 2 MiB a channel),
 * and the node waits for the window while it is full.
 */
#define JOB_TURN_BYTES		(64 * 1024)
#define SESSION_TURN_BYTES	(256 * 1024)

enum jstate {
	J_OPEN,
	J_EXEC,
	J_READ,
	J_CLOSE,
	J_WAITCLOSED,
	J_FREE,
	J_DONE,
};

struct job {
	struct job		*next;
	char			*cmd;
	char			*wire;		/* what is sent: cmd, wrapped */
	LIBSSH2_CHANNEL		*ch;
	enum jstate		 st;
	struct sbuf		 out;		/* a command's; not a stream's */
	struct sbuf		 err;
	struct linebuf		 lines;		/* a stream's, cut into lines */
	ssh_exec_fn		*done;
	ssh_line_fn		*line;
	void			*arg;
	uint64_t		 start_ms;
	uint64_t		 deadline_ms;	/* 0: none (streams) */
	uint64_t		 timeout_ms;	/* 0: none */
	uint64_t		 phase_ms;	/* channel open, exec */
	int			 beats;		/* the heartbeat channel */
	int			 ping;		/* a beat is due to be written */
	int			 reading;	/* a read's window adjust half-sent */
	int			 reported;	/* done was called */
	int			 opening;	/* the channel's open is sent */
	int			 refused;	/* sshd refused the open */
	int			 exit_code;
	const char		*error;
	char			 errbuf[160];
};

/*
 * sshd runs a command without a pty, and when the channel closes (a
 * timeout here, or the connection lost) it only closes the command's
 * pipes: a command that neither reads nor writes (a hung `docker exec`, a
 * `docker events` with nothing to say) would run on for ever. So each
 * command runs in a process group of its own (setsid, where there is one)
 * under a shell that reads its own stdin, which nothing ever writes to:
 * EOF there means the channel is gone, and it kills the group: SIGTERM,
 * then SIGKILL KILL_GRACE_S later for what ignored it (a client stuck in
 * an uninterruptible wait, a `trap '' TERM`; issue 36). Once it has seen
 * EOF the watcher ignores TERM itself, so the wrapper's own kill of it (the
 * command's leader gone) does not spare the group's stragglers; the KILL
 * of a group whose members have all gone finds none. The command itself
 * reads /dev/null; its exit status is the wrapper's. A pty would end the
 * command by SIGHUP instead, but it merges stderr into stdout and turns
 * every \n into \r\n.
 */
#define KILL_GRACE_S	"5"

static char *
wrap(const char *cmd)
{
	struct sbuf b;

	sbuf_init(&b);
	sbuf_add(&b, "tandem_cmd=");
	shell_quote(&b, cmd);
	sbuf_add(&b, "; s=; command -v setsid >/dev/null 2>&1 && s=setsid; "
	    "exec 3<&0; $s sh -c \"$tandem_cmd\" </dev/null 3<&- & p=$!; "
	    "{ while read -r _; do :; done; trap '' TERM; "
	    "kill -TERM -$p || kill -TERM $p; sleep " KILL_GRACE_S "; "
	    "kill -KILL -$p || [ -n \"$s\" ] || kill -KILL $p; } "
	    "<&3 >/dev/null 2>&1 & w=$!; exec 3<&-; wait $p; r=$?; "
	    "kill $w 2>/dev/null; exit $r");
	return sbuf_take(&b);
}

struct job *
job_new(const struct ssh_params *p, const char *cmd, int flags,
    double timeout_s, ssh_line_fn *line, ssh_exec_fn *done, void *arg)
{
	struct job *j = xcalloc(1, sizeof(*j));

	j->cmd = xstrdup(cmd);
	j->wire = flags & JOB_WRAP ? wrap(cmd) : xstrdup(cmd);
	j->beats = (flags & JOB_HEARTBEAT) != 0;
	j->done = done;
	j->line = line;
	j->arg = arg;
	j->start_ms = mono_ms();
	j->timeout_ms = timeout_s > 0 ? (uint64_t)(timeout_s * 1000) : 0;
	j->deadline_ms = j->timeout_ms ? j->start_ms + j->timeout_ms : 0;
	j->phase_ms = j->start_ms + ssh_phase_limit_ms(p);
	sbuf_init(&j->out);
	sbuf_init(&j->err);
	linebuf_init(&j->lines, OUTPUT_CAP);
	return j;
}

void
jobs_append(struct job **list, struct job *j)
{
	struct job **jp;

	for (jp = list; *jp; jp = &(*jp)->next)
		;
	*jp = j;
}

static void
job_free(struct job *j)
{
	free(j->cmd);
	free(j->wire);
	sbuf_free(&j->out);
	sbuf_free(&j->err);
	linebuf_free(&j->lines);
	free(j);
}

static void
job_report(struct job *j)
{
	struct cmd_result r;

	if (j->reported)
		return;
	j->reported = 1;
	memset(&r, 0, sizeof(r));
	r.exit_code = j->error ? -1 : j->exit_code;
	r.out = j->out.s ? j->out.s : "";
	r.outlen = j->out.len;
	r.err = j->err.s ? j->err.s : "";
	r.errlen = j->err.len;
	r.error = j->error;
	r.elapsed_s = (double)(mono_ms() - j->start_ms) / 1000.0;
	log_debug("ssh: %.60s -> %d%s%s in %.3f s", j->cmd ? j->cmd : "?",
	    r.exit_code, r.error ? ", " : "", r.error ? r.error : "",
	    r.elapsed_s);
	if (j->done)
		j->done(&r, j->arg);
}

void
jobs_report(struct job *list, const char *why)
{
	struct job *j;

	while ((j = list)) {
		list = j->next;
		j->ch = NULL;
		if (why && !j->error) {
			snprintf(j->errbuf, sizeof(j->errbuf), "%s", why);
			j->error = j->errbuf;
		}
		job_report(j);
		job_free(j);
	}
}

void
jobs_free_channels(struct job *list)
{
	struct job *j;

	for (j = list; j; j = j->next)
		if (j->ch) {
			libssh2_channel_free(j->ch);
			j->ch = NULL;
		}
}

void
jobs_beat(struct job *list)
{
	struct job *j;

	for (j = list; j; j = j->next)
		if (j->beats && j->st == J_READ)
			j->ping = 1;
}

void
jobs_stood_still(struct job *list, uint64_t ms)
{
	struct job *j;

	for (j = list; j; j = j->next) {
		j->phase_ms += ms;
		if (j->deadline_ms)
			j->deadline_ms += ms;
	}
}

/*
 * sshd allows MaxSessions channels on one connection (10 unless set) and
 * refuses the next open: a failed probe for nothing. A job beyond the
 * session's limit (struct chan_limit) waits for a channel to close; its
 * deadline runs only while nothing ahead of it will end.
 */
#define LIMIT_RAISE_MS	1000	/* struct chan_limit: one more after this */

static size_t
channels_held(const struct job *list)
{
	size_t n = 0;

	for (; list; list = list->next)
		n += list->ch != NULL || list->opening;
	return n;
}

/*
 * A held channel that will come free: a command's before its deadline, or
 * closing after it while the wrapper's kill has time to end it. A command
 * no kill ends (stuck in the kernel) holds its channel for ever: the
 * commands behind it then time out as behind a stream.
 */
#define CLOSE_GRACE_MS	10000	/* KILL_GRACE_S, and sshd's close */

static int
queue_moves(const struct job *list, uint64_t now)
{
	for (; list; list = list->next)
		if ((list->ch != NULL || list->opening) &&
		    list->deadline_ms != 0 &&
		    now < list->deadline_ms + CLOSE_GRACE_MS)
			return 1;
	return 0;
}

static int
waits_turn(const struct job *list, size_t limit, const struct job *j)
{
	return j->st == J_OPEN && !j->opening &&
	    channels_held(list) >= limit;
}

uint64_t
jobs_wake_ms(const struct job *list, const struct chan_limit *lim,
    uint64_t now, uint64_t next)
{
	const struct job *j;

	for (j = list; j; j = j->next) {
		/* a channel came free: the next in line opens now */
		if (j->st == J_OPEN && !j->opening &&
		    !waits_turn(list, lim->max, j))
			return 0;
		/* or may, when the limit rises */
		if (waits_turn(list, lim->max, j) &&
		    lim->max < SSH_CHANNELS_MAX && lim->raise_ms < now + next)
			next = lim->raise_ms > now ? lim->raise_ms - now : 0;
		if (j->deadline_ms && !j->reported &&
		    j->deadline_ms < now + next)
			next = j->deadline_ms > now ?
			    j->deadline_ms - now + 1 : 0;
		if (j->st <= J_EXEC && j->phase_ms < now + next)
			next = j->phase_ms > now ? j->phase_ms - now + 1 : 0;
	}
	return next;
}

static void
job_error(struct job *j, const char *what, const char *msg)
{
	snprintf(j->errbuf, sizeof(j->errbuf), "%s: %s", what, msg);
	j->error = j->errbuf;
}

/*
 * A stream's output goes out line by line (lib/linebuf.c). A line longer
 * than OUTPUT_CAP is dropped, up to its newline, with a warning: keeping
 * its start would fill the buffer for good, and no later line would ever
 * come out.
 */
static void
feed_lines(const struct job_env *env, struct job *j, char *buf, size_t n)
{
	if (linebuf_feed(&j->lines, buf, n, j->line, j->arg) > 0)
		log_warnx("%s: dropped a line of more than %d bytes from `%.60s`",
		    env->p->host, OUTPUT_CAP, j->cmd);
}

/*
 * A channel call failed with rc: -1 when the whole session failed, else
 * this job alone ends, its channel to be closed.
 */
static int
channel_failed(const struct job_env *env, struct job *j, int rc,
    const char *what)
{
	if (ssh_session_error(rc))
		return -1;
	job_error(j, what, ssh_errmsg(env->s));
	j->st = J_CLOSE;
	return 0;
}

/* J_OPEN: -1 when the whole session failed. */
static int
step_open(struct job_env *env, struct job *j)
{
	int rc;

	j->ch = libssh2_channel_open_session(env->s);
	j->opening = j->ch == NULL;
	if (j->ch == NULL) {
		rc = libssh2_session_last_errno(env->s);
		if (rc == LIBSSH2_ERROR_EAGAIN)
			return 0;
		j->opening = 0;
		if (ssh_session_error(rc))
			return -1;
		if (rc == LIBSSH2_ERROR_CHANNEL_FAILURE) {
			j->refused = 1;		/* jobs_run decides */
			return 0;
		}
		job_error(j, "open channel", ssh_errmsg(env->s));
		j->st = J_DONE;
		return 0;
	}
	j->st = J_EXEC;
	j->phase_ms = mono_ms() + ssh_phase_limit_ms(env->p);
	return 0;
}

/* J_EXEC: -1 when the whole session failed. */
static int
step_exec(struct job_env *env, struct job *j)
{
	int rc = libssh2_channel_exec(j->ch, j->wire);

	if (rc == LIBSSH2_ERROR_EAGAIN)
		return 0;
	if (rc < 0)
		return channel_failed(env, j, rc, "exec");
	(*env->execs)++;
	/* timed out while it started: the hang-up ends it */
	j->st = j->reported ? J_CLOSE : J_READ;
	return 0;
}

/*
 * Reads one of the channel's streams (stdout 0, stderr
 * SSH_EXTENDED_DATA_STDERR) until it has nothing more for now (0), or the
 * turn's budget is spent (1: env->unread, the rest waits for the next
 * turn), or the read left a packet half-sent (2: the next call on the
 * session must be this read), or the read failed (a libssh2 error). got
 * counts the job's bytes this turn.
 */
static int
read_stream(struct job_env *env, struct job *j, int stream, size_t *got)
{
	char buf[16384];
	ssize_t n;

	for (;;) {
		if (*got >= JOB_TURN_BYTES || env->budget == 0) {
			env->unread = 1;
			return 1;
		}
		n = libssh2_channel_read_ex(j->ch, stream, buf, sizeof(buf));
		/* the window adjust it sent first is half-sent: read again */
		j->reading = n == LIBSSH2_ERROR_EAGAIN &&
		    ssh_send_pending(env->s);
		if (j->reading)
			return 2;
		if (n == 0 || n == LIBSSH2_ERROR_EAGAIN)
			return 0;
		if (n < 0)
			return (int)n;
		*got += (size_t)n;
		env->budget -= (size_t)n < env->budget ? (size_t)n :
		    env->budget;
		if (stream != 0) {
			if (j->err.len < OUTPUT_CAP)
				sbuf_addn(&j->err, buf, (size_t)n);
		} else if (j->line)
			feed_lines(env, j, buf, (size_t)n);
		else if (j->out.len < OUTPUT_CAP)
			sbuf_addn(&j->out, buf, (size_t)n);
	}
}

/*
 * J_READ: a beat written if one is due, then what stdout and stderr hold,
 * within the turn's budget; at EOF the channel is closed. -1 when the
 * whole session failed.
 */
static int
step_read(struct job_env *env, struct job *j)
{
	ssize_t n;
	size_t got = 0;
	int rc;

	/* a read that left its window adjust half-sent goes first */
	if (j->ping && !j->reading) {
		n = libssh2_channel_write(j->ch, "\n", 1);
		if (n < 0 && n != LIBSSH2_ERROR_EAGAIN)
			return channel_failed(env, j, (int)n, "write");
		if (n == 1)
			j->ping = 0;
		/* half-sent: this write, again, is the session's next call */
		if (n == LIBSSH2_ERROR_EAGAIN && ssh_send_pending(env->s))
			return 0;
	}
	rc = read_stream(env, j, 0, &got);
	if (rc < 0)
		return channel_failed(env, j, rc, "read");
	/* stopped at the budget: stderr and the EOF after the rest */
	if (rc >= 1)
		return 0;
	/* stderr's errors are stdout's too: its next read meets them */
	if (read_stream(env, j, SSH_EXTENDED_DATA_STDERR, &got) >= 1)
		return 0;
	if (libssh2_channel_eof(j->ch))
		j->st = J_CLOSE;
	return 0;
}

/* J_WAITCLOSED, once the close is confirmed: how the command ended. */
static void
read_exit(struct job_env *env, struct job *j)
{
	char *sig = NULL;

	j->exit_code = libssh2_channel_get_exit_status(j->ch);
	/* libssh2 1.10 reports 0 also when no status came: a signal tells. */
	if (libssh2_channel_get_exit_signal(j->ch, &sig, NULL, NULL, NULL,
	    NULL, NULL) == 0 && sig) {
		if (!j->error) {
			snprintf(j->errbuf, sizeof(j->errbuf),
			    "killed by signal %s", sig);
			j->error = j->errbuf;
		}
		libssh2_free(env->s, sig);
	}
}

/*
 * Runs j until it must wait (or is done). -1 when the whole session
 * failed.
 */
static int
job_step(struct job_env *env, struct job *j)
{
	enum jstate was;
	int rc;

	for (;;) {
		was = j->st;
		switch (j->st) {
		case J_OPEN:
			if (step_open(env, j) == -1)
				return -1;
			break;
		case J_EXEC:
			if (step_exec(env, j) == -1)
				return -1;
			break;
		case J_READ:
			if (step_read(env, j) == -1)
				return -1;
			break;
		case J_CLOSE:
			rc = libssh2_channel_close(j->ch);
			if (rc == LIBSSH2_ERROR_EAGAIN)
				return 0;
			if (rc < 0 && ssh_session_error(rc))
				return -1;
			/*
			 * Not closed (sshd keeps the channel, a MaxSessions
			 * slot): the job fails, and channel_free tries the
			 * close again before it lets the channel go.
			 */
			if (rc < 0) {
				if (!j->error)
					job_error(j, "close", ssh_errmsg(env->s));
				j->st = J_FREE;
				break;
			}
			j->st = J_WAITCLOSED;
			break;
		case J_WAITCLOSED:
			rc = libssh2_channel_wait_closed(j->ch);
			if (rc == LIBSSH2_ERROR_EAGAIN)
				return 0;
			read_exit(env, j);
			j->st = J_FREE;
			break;
		case J_FREE:
			rc = libssh2_channel_free(j->ch);
			if (rc == LIBSSH2_ERROR_EAGAIN)
				return 0;
			j->ch = NULL;
			if (j->line)
				linebuf_flush(&j->lines, j->line, j->arg);
			j->st = J_DONE;
			return 0;
		case J_DONE:
			return 0;
		}
		/* A step that did not move the job on waits for the socket. */
		if (j->st == was)
			return 0;
	}
}

/*
 * A job past its timeout is reported now, through a copy that owns the
 * output so far; the job itself goes on to close its channel, unheard.
 */
static struct job *
time_out(struct job *j, uint64_t now)
{
	struct job *copy = xcalloc(1, sizeof(*copy));

	snprintf(j->errbuf, sizeof(j->errbuf), "timed out after %.1f s",
	    (double)(now - j->start_ms) / 1000.0);
	j->error = j->errbuf;
	*copy = *j;
	copy->next = NULL;
	copy->cmd = NULL;
	copy->wire = NULL;
	copy->ch = NULL;
	copy->error = copy->errbuf;
	sbuf_init(&j->out);
	sbuf_init(&j->err);
	linebuf_init(&j->lines, OUTPUT_CAP);
	j->reported = 1;
	j->done = NULL;
	j->line = NULL;
	/* its channel closes at its next step (jobs_run) */
	return copy;
}

/*
 * sshd refused j's channel with held others open: j waits its turn under
 * that limit. With none open, no wait can help.
 */
static void
refused(const struct job_env *env, struct job *list, struct job *j,
    uint64_t now)
{
	struct chan_limit *lim = env->lim;
	size_t held = channels_held(list);

	j->refused = 0;
	if (held == 0) {
		job_error(j, "open channel", "sshd refuses every session "
		    "channel (sshd_config MaxSessions 0?)");
		j->st = J_DONE;
		return;
	}
	if (lim->refused_ms == 0)
		log_warnx("%s: sshd refused a channel with %zu open "
		    "(MaxSessions): more commands wait their turn there",
		    env->p->host, held);
	lim->max = held;
	lim->raise_ms = now + LIMIT_RAISE_MS;
	lim->refused_at = held;
	lim->refused_ms = now;
}

static void
raise_limit(struct chan_limit *lim, uint64_t now)
{
	if (lim->max < SSH_CHANNELS_MAX && now >= lim->raise_ms) {
		lim->max++;
		lim->raise_ms = now + LIMIT_RAISE_MS;
	}
}

/* A job that waited its turn to the end: say why it never ran. */
static void
starved(const struct job_env *env, struct job *copy)
{
	size_t l = strlen(copy->errbuf);

	if (env->lim->refused_ms)
		snprintf(copy->errbuf + l, sizeof(copy->errbuf) - l,
		    " waiting for a channel: sshd refused one with %zu open "
		    "(MaxSessions)", env->lim->refused_at);
	else
		snprintf(copy->errbuf + l, sizeof(copy->errbuf) - l,
		    " waiting for a channel (all %zu in use)", env->lim->max);
}

int
jobs_run(struct job **list, struct job_env *env, uint64_t now,
    struct job **finished, char *why, size_t whylen)
{
	struct job *j, **jp, **ftail = finished;
	int waited = 0;

	*finished = NULL;
	env->budget = SESSION_TURN_BYTES;
	env->unread = 0;
	raise_limit(env->lim, now);
	for (jp = list; (j = *jp);) {
		int queued = waits_turn(*list, env->lim->max, j);

		/* waiting its turn is not sshd's delay */
		if (queued) {
			j->phase_ms = now + ssh_phase_limit_ms(env->p);
			/*
			 * Nor the command's while the channels are held by
			 * commands that end by their own deadlines: its time
			 * starts with its turn. Counted from the queue, a
			 * loaded node's last preflight checks (fifteen share
			 * its channels) timed out behind the first, and the
			 * node was taken for unreachable again and again.
			 * Behind streams alone no turn comes: the deadline
			 * runs (starved, below).
			 */
			if (j->timeout_ms && queue_moves(*list, now)) {
				j->start_ms = now;
				j->deadline_ms = now + j->timeout_ms;
			}
		}
		if (j->st <= J_EXEC && now >= j->phase_ms) {
			/*
			 * sshd answers an open or an exec at once when it can:
			 * one that cannot is stuck, and so is the whole node.
			 */
			snprintf(why, whylen, "ssh %s on %s:%d timed out "
			    "after %.1f s: sshd accepts no new command",
			    j->st == J_OPEN ? "channel open" : "exec",
			    env->p->host, env->p->port,
			    env->p->connect_timeout_s);
			return -1;
		}
		if (j->deadline_ms && now > j->deadline_ms && !j->reported &&
		    j->st <= J_READ) {
			*ftail = time_out(j, now);
			if (queued) {
				starved(env, *ftail);
				j->st = J_DONE;		/* never opened */
			}
			ftail = &(*ftail)->next;
		}
		/*
		 * One sender at a time: while a call has left a packet
		 * half-sent, only its job runs, to repeat that call (libssh2
		 * 1.10 fails any other that sends with BAD_USE, 1.11.0 sends
		 * the half-sent packet's rest as the other's, libssh2 issue
		 * 1431). The others wait a turn; the keepalive too.
		 */
		if ((queued && j->st == J_OPEN) ||
		    (*env->sender != NULL && *env->sender != j)) {
			waited |= !queued;
			jp = &j->next;
			continue;
		}
		/* timed out: its channel closes, no call of its half-done */
		if (j->reported && j->st == J_READ && *env->sender != j)
			j->st = J_CLOSE;
		if (job_step(env, j) == -1) {
			snprintf(why, whylen, "connection to %s lost: %s",
			    env->p->host, ssh_errmsg(env->s));
			return -1;
		}
		*env->sender = ssh_send_pending(env->s) && j->st != J_DONE ?
		    j : NULL;
		if (j->refused)
			refused(env, *list, j, now);
		if (j->st == J_DONE) {
			*jp = j->next;
			j->next = NULL;
			*ftail = j;
			ftail = &j->next;
		} else
			jp = &j->next;
	}
	/*
	 * Those that waited for a sender now done run at the next turn:
	 * what the node sent them may sit in libssh2 already, unpolled.
	 */
	if (waited && *env->sender == NULL)
		env->unread = 1;
	return 0;
}
