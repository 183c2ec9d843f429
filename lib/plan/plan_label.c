/*
 * The tandem.plan label of every container: which plan format wrote it,
 * and the hash of the commands the config renders to (plan.c's plan_hash).
 * Adoption reads it back to tell a cluster built from this config from one
 * built from another, and both from one built by a tandem whose commands
 * differ.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_label.h"

void
plan_label(uint64_t hash, char *buf, size_t len)
{
	snprintf(buf, len, "%d:%016" PRIx64, PLAN_FORMAT, hash);
}

/* 16 lower-case hex digits, the whole of s, as plan_label writes them. */
static int
parse_hash(const char *s, uint64_t *out)
{
	size_t i;

	for (i = 0; i < 16; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' &&
		    s[i] <= 'f')))
			return -1;
	if (s[16] != '\0')
		return -1;
	*out = strtoull(s, NULL, 16);
	return 0;
}

enum plan_match
plan_label_match(const char *label, uint64_t hash)
{
	const char *colon = strchr(label, ':');
	long format = 1;	/* a bare hash */
	uint64_t h;
	char *end;

	if (colon) {
		format = strtol(label, &end, 10);
		if (end != colon || end == label || format < 1)
			return PLAN_OTHER_CONFIG;
		label = colon + 1;
	}
	if (parse_hash(label, &h) == -1)
		return PLAN_OTHER_CONFIG;
	if (format < PLAN_HASH_SINCE || format > PLAN_FORMAT)
		return PLAN_OTHER_FORMAT;
	return h == hash ? PLAN_SAME : PLAN_OTHER_CONFIG;
}
