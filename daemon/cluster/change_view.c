/*
 * What /status and /metrics show of a change (change.c): its phase and
 * verdict (cluster_change_json), the counts, and which config runs and
 * why (cluster_config_json): the file's, an applied one, or the last
 * known good.
 */
#include <stdio.h>
#include <string.h>

#include "cluster_int.h"

json_t *
cluster_change_json(const struct cluster *cl)
{
	const struct change_rt *c = &cl->chg;

	if (c->phase == CH_NONE)
		return json_pack("{s:s, s:I, s:b}", "phase", "none", "reloads",
		    (json_int_t)c->reloads, "last_reload_ok", cl->cnt.reload_ok);
	return json_pack("{s:s, s:s, s:I, s:s, s:o, s:o, s:o, s:f, s:I, s:I, "
	    "s:b}",
	    "from", c->from, "to", c->to,
	    "from_generation", (json_int_t)c->from_gen,
	    "phase", change_phase_name(c->phase),
	    "result", c->result[0] ? json_string(c->result) : json_null(),
	    "reason", c->reason[0] ? json_string(c->reason) : json_null(),
	    "fix", c->fix[0] ? json_string(c->fix) : json_null(),
	    "since", c->at,
	    "reloads", (json_int_t)c->reloads,
	    "reload", (json_int_t)c->reload_of,
	    "last_reload_ok", cl->cnt.reload_ok);
}

void
cluster_change_counts(const struct cluster *cl, uint64_t *applied,
    uint64_t *refused, uint64_t *rolled_back)
{
	*applied = cl->chg.applied;
	*refused = cl->chg.refused;
	*rolled_back = cl->chg.rolled_back;
}

json_t *
cluster_config_json(const struct cluster *cl)
{
	const struct change_rt *c = &cl->chg;
	char sum[20];

	char why[sizeof(c->reason) + 200];

	const char *path = cl->cf->path ? cl->cf->path : "";
	/* tandemctl apply's, or tandemctl rollback's, until a reload */
	int applied = c->own_path && strcmp(path, c->own_path) != 0;
	size_t n = strlen(path);
	const char *running;

	snprintf(sum, sizeof(sum), "%016llx",
	    (unsigned long long)plan_hash(cl->cf));
	why[0] = '\0';
	if (c->phase == CH_ROLLED_BACK)
		utf8_fmt(why, sizeof(why), "last-known-good, the %s config "
		    "(%s) rolled back at %.0f because %s", applied ? "applied" :
		    "file's", c->to, c->at, c->reason);
	else if (applied)
		utf8_fmt(why, sizeof(why), "applied by tandemctl %s from %s, "
		    "not tandemd's own file %s, until the next reload",
		    n >= 15 && strcmp(path + n - 15, "/last-good.json") == 0 ?
		    "rollback" : "apply", path, c->own_path);
	if (c->phase == CH_ROLLED_BACK)
		running = "last-known-good";
	else if (applied && n >= 15 &&
	    strcmp(path + n - 15, "/last-good.json") == 0)
		running = "last-known-good";
	else
		running = applied ? "applied" : "file";
	return json_pack("{s:s, s:s, s:s, s:o, s:o}", "checksum", sum,
	    "running", running, "file", path,
	    "message", why[0] ? json_string(why) : json_null(),
	    "last_good", c->good_text == NULL ? json_null() :
	    json_pack("{s:s, s:I, s:f, s:f}", "checksum", c->good_sum,
	    "generation", (json_int_t)c->good_gen,
	    "served_since", c->good_since, "last_served", c->good_last));
}
