/*
 * Whether a node's silence is its own. The daemon asks each node for an
 * answer every beat (a heartbeat line, or libssh2's keepalive); a node is
 * silent when nothing came from it, but only for as long as it was asked:
 * from no earlier than one beat before the oldest beat the daemon actually
 * wrote since the node's last byte. A daemon that stood still, or whose
 * beat waited unwritten, asked nothing meanwhile and is owed nothing.
 * Pure: the daemon passes the clock and the socket's tcp_info times in
 * (ms ago, as the kernel gives them: tcpi_last_data_recv and _sent).
 */
#ifndef TANDEM_SILENCE_H
#define TANDEM_SILENCE_H

#include <stdint.h>

/*
 * tcp_info's times are counted in jiffies (4 ms at HZ 250, 10 at HZ 100):
 * an answer within that of a beat counts as after it.
 */
#define SILENCE_SLACK_MS	10

struct silence {
	uint64_t	 asked_ms;	/* the oldest beat asked, not seen out */
	uint64_t	 owed_ms;	/* the oldest beat out, unanswered */
	uint64_t	 looked_ms;	/* the last look at the socket */
};

/* A new session: nothing asked, nothing owed. */
void		 silence_start(struct silence *, uint64_t now_ms);
/* A beat goes out now (its write may yet wait). */
void		 silence_beat(struct silence *, uint64_t now_ms);
/*
 * A look at the socket: the kernel's ms since the last data in
 * (recv_ago) and out (sent_ago). Data out since the last look, after a
 * beat was asked, is that beat written (then, or at the last look if
 * later); data in after a beat answers it. Returns the node's silence:
 * recv_ago, but no more than since the oldest beat written and
 * unanswered plus credit_ms (the one interval a beat may come after the
 * last answer); 0 when every beat written is answered.
 */
uint64_t	 silence_look(struct silence *, uint64_t now_ms,
		    uint32_t recv_ago, uint32_t sent_ago, uint64_t credit_ms);
/* The ms since the oldest unanswered beat was written; 0: none. */
uint64_t	 silence_owed_ago(const struct silence *, uint64_t now_ms);

#endif
