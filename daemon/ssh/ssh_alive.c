/*
 * Liveness does not wait for a command to hang. A node that closes the
 * connection (reboot, sshd killed) is seen at once, as a read error on the
 * channels that always read (heartbeat, docker events) or as the kernel's
 * TCP state. A node that goes silent (network cut, power-off) is seen when
 * no byte has arrived for three keepalive_s, the timer set to that moment:
 * every keepalive_s the daemon writes a line to a heartbeat channel on each
 * session and the node echoes it (libssh2's keepalives go out by whole
 * seconds only, so alone they allow no less than two intervals and a second
 * of silence, which stays the rule if the heartbeat cannot run). The beats
 * fall on multiples of keepalive_s of the loop's clock, the same instant
 * for every session: the loop wakes once per beat for all nodes, not once
 * per node.
 *
 * Silence is the node's only once the daemon asked: it counts from the
 * node's last byte, but no longer than from the oldest beat the daemon
 * actually wrote since then (the kernel saw data leave the socket after
 * the beat was asked), plus the one interval a beat may come after the
 * last answer. A daemon that stood still, or whose beat waited unwritten
 * (libssh2 blocked outbound), asked nothing meanwhile, and is owed nothing.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ssh_int.h"
#include "log.h"

/*
 * Echoes each line the daemon writes: the shell's builtin read, no process
 * per beat, POSIX (any login shell runs it); ends with the channel.
 */
#define HEARTBEAT_CMD	"while read -r _; do echo; done"

/*
 * libssh2 counts keepalive intervals in whole seconds of time(); asking for
 * one every keepalive_s / 2 keeps a reply arriving well within the two
 * intervals check_alive allows. While the heartbeat beats they are not
 * needed: its lines say more, more often.
 */
static unsigned
keepalive_every_s(const struct sshc *c)
{
	return c->p.keepalive_s < 2 ? 1 : (unsigned)(c->p.keepalive_s / 2);
}

static void
keepalives(struct sshc *c, int on)
{
	libssh2_keepalive_config(c->s, 1, on ? keepalive_every_s(c) : 0);
}

static void
on_heartbeat(const char *line, void *arg)
{
	struct sshc *c = arg;

	(void)line;
	if (!c->heartbeat)
		keepalives(c, 0);
	c->heartbeat = 1;
}

static void
on_heartbeat_end(const struct cmd_result *r, void *arg)
{
	struct sshc *c = arg;

	/*
	 * Keepalives are off while the heartbeat job runs (alive_start), so
	 * they come back whenever it ends on a live session, whether or not
	 * a line ever came: a heartbeat refused before its first line would
	 * else leave the node asked nothing, and never judged silent.
	 */
	if (c->state == C_UP) {
		log_warnx("%s: heartbeat ended (%s); silence is judged by "
		    "keepalives alone", c->p.host, r->error ? r->error :
		    "exit");
		keepalives(c, 1);
	}
	c->heartbeat = 0;
	c->hb_job = 0;
}

struct job *
alive_start(struct sshc *c)
{
	/*
	 * Off until the heartbeat fails to run (on_heartbeat_end): a
	 * keepalive libssh2 sends only in part is finished by nothing but
	 * the next keepalive, see alive_watch. The node answers the
	 * heartbeat's channel open and first beat within a beat.
	 */
	keepalives(c, 0);
	c->quiet_ms = 0;
	c->last_beat_ms = 0;
	c->asked_ms = uv_now(c->loop);
	silence_start(&c->beats, mono_ms());
	c->heartbeat = 0;
	c->hb_job = 1;
	/*
	 * Unwrapped: its read loop already ends when the channel closes.
	 * ssh_session.c puts it on the session: this file calls nothing of
	 * ssh_session.c.
	 */
	return job_new(&c->p, HEARTBEAT_CMD, JOB_HEARTBEAT, 0, on_heartbeat,
	    on_heartbeat_end, c);
}

static uint64_t
beat_ms(const struct sshc *c)
{
	return (uint64_t)(c->p.keepalive_s * 1000);
}

/* How long a node may send nothing before it is lost, in ms. */
static uint64_t
silence_limit_ms(const struct sshc *c)
{
	/*
	 * Each keepalive asks for a reply, so a live node sends something
	 * about every keepalive_s. libssh2 schedules keepalives by whole
	 * seconds and skips them after other traffic, so replies can be up to
	 * ~2 s apart on a healthy idle session (measured): two intervals and
	 * one second more of silence is a lost node, never a slow one. With
	 * the heartbeat a line comes every keepalive_s: three missed are.
	 */
	uint64_t ms = (uint64_t)(2 * (c->p.keepalive_s < 1 ? 1 :
	    c->p.keepalive_s) * 1000) + 1000;

	if (c->heartbeat && 3 * c->p.keepalive_s * 1000 < ms)
		ms = (uint64_t)(3 * c->p.keepalive_s * 1000);
	return ms;
}

/* How long one beat may follow the node's last answer, in ms. */
static uint64_t
beat_credit_ms(const struct sshc *c)
{
	return c->heartbeat ? beat_ms(c) : (uint64_t)keepalive_every_s(c) * 1000;
}

/*
 * The first line of /proc/pressure/WHAT ("some avg10=... total=..."), or
 * why not: read once, at a failure, without blocking (procfs answers at
 * once; O_NONBLOCK says so should it ever not).
 */
static void
pressure(const char *what, char *out, size_t outlen)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/pressure/%s", what);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1) {
		snprintf(out, outlen, "%s", strerror(errno));
		return;
	}
	n = read(fd, out, outlen - 1);
	if (n < 0)
		snprintf(out, outlen, "%s", strerror(errno));
	else {
		out[n] = '\0';
		out[strcspn(out, "\n")] = '\0';
	}
	close(fd);
}

/*
 * What the failure saw, for telling the node's silence from the daemon's
 * or the machine's: the socket's own times (ms ago), the beat owed, and
 * how starved of CPU and memory the machine was.
 */
static void
log_silence(const struct sshc *c, const struct tcp_info *ti, uint64_t now)
{
	char cpu[160], mem[160];

	pressure("cpu", cpu, sizeof(cpu));
	pressure("memory", mem, sizeof(mem));
	log_warnx("%s: at the silence: tcp state %u, last data sent %u ms ago, "
	    "last ack received %u ms ago, last data received %u ms ago, "
	    "%u segments unacked, %u retransmitted in all; oldest unanswered "
	    "beat written %llu ms ago%s; the loop's last beat %llu ms ago; "
	    "cpu pressure: %s; memory pressure: %s", c->p.host,
	    (unsigned)ti->tcpi_state, ti->tcpi_last_data_sent,
	    ti->tcpi_last_ack_recv, ti->tcpi_last_data_recv, ti->tcpi_unacked,
	    ti->tcpi_total_retrans,
	    (unsigned long long)silence_owed_ago(&c->beats, now),
	    c->heartbeat ? " (heartbeat)" : " (keepalive)",
	    (unsigned long long)(uv_now(c->loop) - c->last_beat_ms), cpu, mem);
}

/* The kernel knows before any command would: closed, or silent too long. */
static int
check_alive(struct sshc *c, char *why, size_t whylen)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	uint64_t silent_ms = silence_limit_ms(c), lnow = uv_now(c->loop);
	uint64_t now = mono_ms();

	if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
		return 0;
	/* Nothing written unanswered: not asked, not silent. */
	c->quiet_ms = silence_look(&c->beats, now, ti.tcpi_last_data_recv,
	    ti.tcpi_last_data_sent, beat_credit_ms(c));
	/* Not asked since the daemon stood still: see alive_watch. */
	if (lnow >= c->asked_ms && lnow - c->asked_ms < c->quiet_ms)
		c->quiet_ms = lnow - c->asked_ms;
	if (ti.tcpi_state == TCP_CLOSE_WAIT || ti.tcpi_state == TCP_CLOSE ||
	    ti.tcpi_state == TCP_LAST_ACK) {
		snprintf(why, whylen, "%s closed the connection", c->p.host);
		return -1;
	}
	if (c->quiet_ms > silent_ms) {
		log_silence(c, &ti, now);
		snprintf(why, whylen, "%s silent for %.1f s (keepalive)",
		    c->p.host, c->quiet_ms / 1000.0);
		return -1;
	}
	return 0;
}

/*
 * C_UP, before the jobs: libssh2 sends a keepalive when one is due, the
 * kernel says whether the node is still there, and the heartbeat channels
 * are asked for an echo when a beat is due. -1: the session is gone, why
 * says how; the caller fails it (ssh_session.c's ssh_fail).
 */
int
alive_watch(struct sshc *c, char *why, size_t whylen)
{
	int rc = -1, next = 0;	/* -1: no keepalive sent this pump */

	/*
	 * The loop back more than two beats after its last one: the daemon
	 * itself stood still (stopped, starved of CPU, the machine paused)
	 * and asked no node anything meanwhile. What a node did not send
	 * then is not its silence (both nodes were called lost at once under
	 * load): it counts from now, when this pump's beat asks again. Nor
	 * are the commands' deadlines theirs: an answer that came meanwhile
	 * is unread, and a channel open sent just before the stop looked
	 * like an sshd that accepts no command (41, in CI).
	 */
	if (c->last_beat_ms && uv_now(c->loop) - c->last_beat_ms >
	    2 * beat_ms(c)) {
		c->asked_ms = uv_now(c->loop);
		jobs_stood_still(c->jobs, uv_now(c->loop) - c->last_beat_ms);
	}
	/*
	 * Not while a job's packet is half-sent (libssh2 1.10: BAD_USE).
	 * One of its own left half-sent is finished only by the keepalive
	 * an interval later (libssh2_keepalive_send hides its EAGAIN) from
	 * a stack buffer that must lie where the first one did; else that
	 * keepalive fails with BAD_USE and the session is given up. Rare:
	 * keepalives run only while the heartbeat cannot, and the socket's
	 * buffer must be full just then.
	 */
	if (c->sender == NULL || c->sender == c) {
		rc = libssh2_keepalive_send(c->s, &next);
		if (rc && rc != LIBSSH2_ERROR_EAGAIN && ssh_session_error(rc)) {
			snprintf(why, whylen, "keepalive to %s: %s",
			    c->p.host, ssh_errmsg(c->s));
			return -1;
		}
		c->sender = ssh_send_pending(c->s) ? c : NULL;
	}
	/*
	 * libssh2 (keepalive.c) sets the next one a whole interval away when
	 * it sent one now, and answers 0 on EAGAIN too: whether it left the
	 * socket is the kernel's to say (silence_look).
	 */
	if (rc == 0 && !c->heartbeat && next == (int)keepalive_every_s(c))
		silence_beat(&c->beats, mono_ms());
	if (check_alive(c, why, whylen) == -1)
		return -1;
	/*
	 * Beats are kept in the loop's time, which every timer of this
	 * iteration shares: all sessions' beat timers then expire together.
	 */
	if (uv_now(c->loop) >= c->next_beat_ms) {
		c->last_beat_ms = uv_now(c->loop);
		jobs_beat(c->jobs);
		/*
		 * Before its first line too: the channel's open and first
		 * ping are what the node owes an answer to (a node that hangs
		 * right after login must still be found silent).
		 */
		if (c->hb_job)
			silence_beat(&c->beats, mono_ms());
		c->next_beat_ms = (uv_now(c->loop) / beat_ms(c) + 1) *
		    beat_ms(c);
	}
	return 0;
}

uint64_t
alive_wake_ms(const struct sshc *c, uint64_t next)
{
	uint64_t lnow = uv_now(c->loop), limit;

	if (c->heartbeat || c->next_beat_ms < lnow + next)
		next = c->next_beat_ms > lnow ? c->next_beat_ms - lnow : 0;
	/*
	 * From what check_alive read in the pump just run; kernel jiffies: a
	 * few ms late rather than a tick late.
	 */
	limit = silence_limit_ms(c) + 5;
	if (c->quiet_ms < limit && limit - c->quiet_ms < next)
		next = limit - c->quiet_ms;
	return next;
}
