/* Whether a node's silence is its own: see silence.h. */
#include "silence.h"

void
silence_start(struct silence *s, uint64_t now_ms)
{
	s->asked_ms = 0;
	s->owed_ms = 0;
	s->looked_ms = now_ms;
}

void
silence_beat(struct silence *s, uint64_t now_ms)
{
	/* Only the oldest counts: later beats owe nothing more. */
	if (!s->asked_ms && !s->owed_ms)
		s->asked_ms = now_ms;
}

uint64_t
silence_look(struct silence *s, uint64_t now_ms, uint32_t recv_ago,
    uint32_t sent_ago, uint64_t credit_ms)
{
	uint64_t recv_at = now_ms > recv_ago ? now_ms - recv_ago : 0;
	uint64_t sent_at = now_ms > sent_ago ? now_ms - sent_ago : 0;
	uint64_t quiet, owed;

	if (s->owed_ms && recv_at + SILENCE_SLACK_MS >= s->owed_ms)
		s->owed_ms = 0;
	if (s->asked_ms && recv_at + SILENCE_SLACK_MS >= s->asked_ms)
		s->asked_ms = 0;
	if (s->asked_ms && !s->owed_ms &&
	    sent_at + SILENCE_SLACK_MS >= s->looked_ms &&
	    sent_at + SILENCE_SLACK_MS >= s->asked_ms) {
		s->owed_ms = s->asked_ms > s->looked_ms ? s->asked_ms :
		    s->looked_ms;
		s->asked_ms = 0;
	}
	s->looked_ms = now_ms;
	if (!s->owed_ms)
		return 0;
	quiet = recv_ago;
	owed = silence_owed_ago(s, now_ms) + credit_ms;
	return owed < quiet ? owed : quiet;
}

uint64_t
silence_owed_ago(const struct silence *s, uint64_t now_ms)
{
	return s->owed_ms && now_ms > s->owed_ms ? now_ms - s->owed_ms : 0;
}
