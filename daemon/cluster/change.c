/*
 * A change of what the containers run (issue 46): container.image,
 * vllm.model, vllm.args, container.env or container.volumes. While the
 * cluster serves, a reload with such a change does not tear it down at
 * once: it first asks every node the preflight's read-only questions for
 * the NEW config that need no GPU (the image present and identical on
 * every node, or restorable from its archive; the model directory
 * present and identical), on the daemon's own sessions, while the old
 * cluster keeps serving. A change that fails them is refused: the old
 * config stays running, at the same generation, and /status (change), an
 * event, the journal and tandem_config_changes_total say why. One that
 * passes is applied as a reload applied it before: teardown and rebuild.
 * A change while the cluster does not serve is applied at once, as
 * before: there is nothing to keep. The last config that reached serving
 * is kept in the state dir (last-good.json); a switch that does not reach
 * serving (a diagnosis a retry cannot fix, or recovery.change_attempts
 * failed attempts) is rolled back to it, and stays there until the file
 * changes. The config's file is never rewritten.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "conffile.h"
#include "hooks.h"

/* The questions that need no GPU and change nothing on a node. */
#define CHANGE_ASK	(PFA_IMAGE | PFA_MODEL)

static void	change_answered(struct owner *, struct op *,
		    const struct answer *);

void
change_init(struct cluster *cl,
    void (*apply)(struct cluster *, struct config *, char *),
    int (*rollback_to)(struct cluster *, struct config *, char *, size_t))
{
	cl->chg.apply = apply;
	cl->chg.rollback_to = rollback_to;
	owner_init(&cl->chg.own, &cl->exec, change_answered);
	/* a rebuild for a change ends the check itself (change_switching) */
	owners_register(&cl->chg.own, OWNERS_FREE);
	cl->plan.on_built = change_built;	/* cluster_plan tells it */
	/* what runs at start is this config's, adopted, or built from it */
	change_built(cl);
}

static void
drop_check(struct cluster *cl)
{
	struct change_rt *c = &cl->chg;

	owner_cancel(&c->own);
	preflight_free(c->pf);
	c->pf = NULL;
	config_free(c->next);
	c->next = NULL;
	free(c->next_key);
	c->next_key = NULL;
}

void
change_free(struct cluster *cl)
{
	drop_check(cl);
	free(cl->chg.good_text);
	cl->chg.good_text = NULL;
	config_free(cl->chg.start_cf);
	cl->chg.start_cf = NULL;
	free(cl->chg.own_path);
	cl->chg.own_path = NULL;
}

static void
hash_hex(const struct config *cf, char *out, size_t len)
{
	snprintf(out, len, "%016llx", (unsigned long long)plan_hash(cf));
}

/*
 * The file's own bytes, hashed (FNV-1a): whether a restart finds the text
 * that was rolled back. It tells a changed file, not an attacker's.
 */
static void
text_hash_hex(const char *text, char *out, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const unsigned char *p;

	for (p = (const unsigned char *)(text ? text : ""); *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ULL;
	}
	snprintf(out, len, "%016llx", (unsigned long long)h);
}

static void		 change_save(struct cluster *);

static void
set_phase(struct cluster *cl, enum change_phase p, const char *result)
{
	cl->chg.phase = p;
	cl->chg.at = now_s();
	utf8_copy(cl->chg.result, sizeof(cl->chg.result), result);
	/* a rollback that could not be made was that change's alone */
	if (p != CH_SWITCHING)
		cl->chg.no_rollback = 0;
	change_save(cl);
}

/*
 * change.json in the state dir, at every phase: a tandemd restarted while
 * switching still rolls back a config that does not serve, and /status
 * still shows the last verdict. Written atomically, as state.json is.
 */
static void
change_save(struct cluster *cl)
{
	const struct change_rt *c = &cl->chg;
	char *data;
	json_t *j;

	/* rolled back: which text of the file, so a restart stays on good */
	j = json_pack("{s:s, s:s, s:s, s:s, s:I, s:f, s:s, s:s, s:b, s:s?}",
	    "phase", change_phase_name(c->phase), "result", c->result,
	    "from", c->from, "to", c->to,
	    "from_generation", (json_int_t)c->from_gen, "since", c->at,
	    "reason", c->reason, "fix", c->fix, "no_rollback", c->keep_failed,
	    "rolled_back_file", c->phase == CH_ROLLED_BACK && c->bad_file[0] ?
	    c->bad_file : NULL);
	data = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (data == NULL) {
		log_warnx("state dir: cannot encode change.json; not written");
		return;
	}
	state_save_change(cl, data);
}

static const char *
jstr_or(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

/*
 * The file's config as a change of its own, from the last good one: it
 * starts, and is rolled back if it does not serve. None when the file
 * holds the last good config itself.
 */
static void
restart_as_change(struct cluster *cl, const char *why)
{
	struct change_rt *c = &cl->chg;

	hash_hex(cl->cf, c->to, sizeof(c->to));
	c->bad_file[0] = '\0';
	if (c->good_text == NULL || strcmp(c->good_sum, c->to) == 0) {
		c->phase = CH_NONE;
		return;
	}
	utf8_copy(c->from, sizeof(c->from), c->good_sum);
	c->reason[0] = c->fix[0] = c->result[0] = '\0';
	c->from_gen = cl->generation;
	c->attempt0 = 0;
	c->keep_failed = 0;	/* --no-rollback was an apply's, not the file's */
	c->phase = CH_SWITCHING;
	change_save(cl);
	log_info("change to %s: %s; tandemd starts with it, rolled back to %s "
	    "if it does not serve", c->to, why, c->from);
}

/*
 * The last good config, parsed from its kept text, with its key files and
 * known_hosts checked as a start or reload checks them; NULL and why.
 */
static struct config *
change_good_config(struct cluster *cl, char *err, size_t errlen)
{
	struct config *nc;

	nc = config_parse(cl->chg.good_text, cl->cf->path ? cl->cf->path :
	    "last-good.json", err, errlen);
	if (nc && conffile_check_files(nc, err, errlen) == -1) {
		config_free(nc);
		nc = NULL;
	}
	return nc;
}

/*
 * Rolled back when tandemd stopped: while the file still holds the text
 * rolled back, the last good config is the one tandemd starts on, as
 * before the restart; /status keeps the verdict and its reason.
 */
static void
restore_rolled_back(struct cluster *cl, const char *bad)
{
	struct change_rt *c = &cl->chg;
	char sum[sizeof(c->bad_file)], err[ERRLEN];
	struct config *nc;

	text_hash_hex(cl->cf->text, sum, sizeof(sum));
	if (bad[0] == '\0' || strcmp(bad, sum) != 0 || c->good_text == NULL) {
		restart_as_change(cl, "the file changed since its last "
		    "config was rolled back");
		return;
	}
	nc = change_good_config(cl, err, sizeof(err));
	if (nc == NULL) {
		log_node(LOG_ERR, NULL, "the file's config was rolled back, "
		    "but the last good config (%s) cannot be taken: %s",
		    c->good_sum, err);
		restart_as_change(cl, "the last good config cannot be taken");
		return;
	}
	utf8_copy(c->bad_file, sizeof(c->bad_file), sum);
	config_free(c->start_cf);
	c->start_cf = nc;
	log_info("the file still holds the config rolled back at %.0f (%s): "
	    "tandemd starts on the last good config %s", c->at, c->reason,
	    c->good_sum);
}

/*
 * Refused, or stopped in another change: the file holds a config other
 * than the last good one, which tandemd starts with unchecked, so it is a
 * change that may roll back.
 */
static void
start_unchecked(struct cluster *cl)
{
	char sum[sizeof(cl->chg.to)];

	hash_hex(cl->cf, sum, sizeof(sum));
	if (cl->chg.good_text && strcmp(sum, cl->chg.good_sum) != 0)
		restart_as_change(cl, "the file's config was not checked");
}

struct config *
change_start_config(struct cluster *cl)
{
	struct config *nc = cl->chg.start_cf;

	cl->chg.start_cf = NULL;
	return nc;
}

void
change_built(struct cluster *cl)
{
	hash_hex(cl->cf, cl->chg.built, sizeof(cl->chg.built));
}

static void
change_restore(struct cluster *cl, json_t *j)
{
	struct change_rt *c = &cl->chg;
	const char *phase = jstr_or(j, "phase");
	char sum[sizeof(c->to)];
	enum change_phase p;

	for (p = CH_NONE; p <= CH_ROLLED_BACK; p++)
		if (strcmp(phase, change_phase_name(p)) == 0)
			break;
	if (p > CH_ROLLED_BACK || p == CH_NONE)
		return;
	utf8_copy(c->from, sizeof(c->from), jstr_or(j, "from"));
	utf8_copy(c->to, sizeof(c->to), jstr_or(j, "to"));
	utf8_copy(c->result, sizeof(c->result), jstr_or(j, "result"));
	utf8_copy(c->reason, sizeof(c->reason), jstr_or(j, "reason"));
	utf8_copy(c->fix, sizeof(c->fix), jstr_or(j, "fix"));
	c->at = json_number_value(json_object_get(j, "since"));
	c->from_gen = (uint64_t)json_integer_value(json_object_get(j,
	    "from_generation"));
	c->keep_failed = json_is_true(json_object_get(j, "no_rollback"));
	c->phase = p;
	if (p == CH_ROLLED_BACK) {
		restore_rolled_back(cl, jstr_or(j, "rolled_back_file"));
		return;
	}
	if (p == CH_REFUSED) {
		start_unchecked(cl);
		return;
	}
	if (p != CH_CHECKING && p != CH_SWITCHING)
		return;
	/*
	 * Stopped in the middle: the config tandemd starts with is the one
	 * it was switching to (or checking, which the start now runs without
	 * the check): its switch goes on, and is rolled back if it does not
	 * serve. Another config (the file changed, or an apply's config,
	 * which a restart does not keep) is a change of its own.
	 */
	hash_hex(cl->cf, sum, sizeof(sum));
	if (strcmp(sum, c->to) != 0) {
		log_info("change to %s: tandemd stopped while %s it; it starts "
		    "with %s instead", c->to, phase, sum);
		utf8_copy(c->reason, sizeof(c->reason), "tandemd restarted on "
		    "another config before the change served");
		utf8_copy(c->result, sizeof(c->result), "superseded");
		c->phase = CH_REFUSED;
		start_unchecked(cl);
		return;
	}
	if (p == CH_CHECKING)
		c->from_gen = cl->generation;
	c->phase = CH_SWITCHING;
	log_info("change to %s: tandemd stopped while %s it; the switch goes "
	    "on, %s", c->to, phase, c->keep_failed ? "kept if it does not "
	    "serve (--no-rollback)" : "rolled back to the last good config "
	    "if it does not serve");
}

int
change_guarded(const struct cluster *cl, const struct config *old,
    const struct config *nc)
{
	/*
	 * Only a cluster that serves has something to keep; the check runs
	 * on the running sessions, so the nodes must be the same ones.
	 */
	return cl->fsm.state == ST_SERVING && !cl->fsm.halted &&
	    cl->fsm.action != A_PAUSED && !cl->stopping &&
	    config_change_differs(old, nc) && !config_nodes_changed(old, nc);
}

/* The driver's send (lib/preflight/preflight_run.c): the change's own ops. */
static int
send_cmd(void *ctx, const struct pf_cmd *pc)
{
	struct change_rt *c = &((struct cluster *)ctx)->chg;

	return op_ssh(&c->own, pc->node, pc->tag, 0, pc->cmd,
	    preflight_timeout_s(c->next), TS_COUNT);
}

/* Every node answered: refused, or applied as the reload would have. */
static void
judged(struct cluster *cl)
{
	struct change_rt *c = &cl->chg;
	struct config *nc;
	enum diag_code code;
	char excerpt[sizeof(c->reason)], line[sizeof(c->reason) + 100], *fix;
	size_t node;
	char *key;

	owner_cancel(&c->own);
	if (preflight_failure(c->pf, &node, &code, excerpt, sizeof(excerpt))) {
		fix = strstr(excerpt, "; fix: ");
		if (fix) {
			utf8_copy(c->fix, sizeof(c->fix), fix + 7);
			*fix = '\0';
		} else
			utf8_copy(c->fix, sizeof(c->fix), diag_get(code)->remedy);
		utf8_fmt(c->reason, sizeof(c->reason), "node %s: %s",
		    node < cl->nnodes ? cl->nodes[node].conf->name : "?",
		    excerpt);
		set_phase(cl, CH_REFUSED, "refused");
		c->refused++;
		drop_check(cl);
		utf8_fmt(line, sizeof(line), "change refused, the running "
		    "config stays: %s", c->reason);
		log_node(LOG_ERR, NULL, "%s; fix: %s", line, c->fix);
		history_note(cl, line);
		notify_status("change refused, the running config stays");
		hooks_on_change(cl->loop, cl->cf, "refused", c->from, c->to,
		    c->reason, cl->generation);
		return;
	}
	log_info("change checked on every node (image, model): switching "
	    "to %s", c->to);
	preflight_free(c->pf);
	c->pf = NULL;
	nc = c->next;
	key = c->next_key;
	c->next = NULL;
	c->next_key = NULL;
	c->apply(cl, nc, key);
}

void
change_check(struct cluster *cl, struct config *nc, char *key)
{
	struct change_rt *c = &cl->chg;
	size_t i;

	c->next = nc;
	c->next_key = key;
	c->reload_of = c->reloads;
	c->from_gen = cl->generation;
	hash_hex(cl->cf, c->from, sizeof(c->from));
	hash_hex(nc, c->to, sizeof(c->to));
	c->reason[0] = c->fix[0] = '\0';
	set_phase(cl, CH_CHECKING, "");
	log_info("change of what the containers run (%s to %s): checking "
	    "every node first; generation %llu keeps serving", c->from, c->to,
	    (unsigned long long)cl->generation);
	history_note(cl, "configuration change: checking every node first, the running "
	    "config keeps serving");
	c->pf = preflight_new_only(nc, CHANGE_ASK);
	c->run = (struct pf_runner){ .pf = c->pf, .send = send_cmd, .ctx = cl };
	for (i = 0; i < cl->nnodes; i++)
		preflight_run_node(&c->run, i, op_node_up(&cl->exec, i),
		    "ssh: not connected (the daemon's session to the node is "
		    "down)");
	preflight_run_more(&c->run);
	if (preflight_complete(c->pf))
		judged(cl);
}

static void
change_answered(struct owner *w, struct op *o, const struct answer *ans)
{
	struct cluster *cl = container_of(w, struct cluster, chg.own);
	struct change_rt *c = &cl->chg;

	if (c->phase != CH_CHECKING || c->pf == NULL)
		return;
	/* stopping: a verdict now would rebuild under the stop's feet */
	if (cl->stopping) {
		drop_check(cl);
		return;
	}
	preflight_run_answer(&c->run, o->node, o->tag, ans->cmd);
	if (preflight_complete(c->pf))
		judged(cl);
}

void
change_supersede(struct cluster *cl)
{
	struct change_rt *c = &cl->chg;

	if (c->phase != CH_CHECKING)
		return;
	drop_check(cl);
	utf8_copy(c->reason, sizeof(c->reason), "a newer reload came before "
	    "the check ended; it is judged on its own");
	c->fix[0] = '\0';
	set_phase(cl, CH_REFUSED, "superseded");
	log_info("change to %s: %s", c->to, c->reason);
}

void
change_switching(struct cluster *cl, const struct config *old,
    const struct config *nc)
{
	struct change_rt *c = &cl->chg;

	if (c->rolling)
		return;
	if (!config_change_differs(old, nc)) {
		/*
		 * A reload mid-switch that rebuilds for another key: the
		 * switch is to this config now (change_tick applies it once
		 * what was built from it serves).
		 */
		if (c->phase == CH_SWITCHING) {
			hash_hex(nc, c->to, sizeof(c->to));
			change_save(cl);
		}
		return;
	}
	if (c->phase != CH_CHECKING) {
		/* not checked: the cluster did not serve, or the nodes change */
		c->reload_of = c->reloads;
		hash_hex(old, c->from, sizeof(c->from));
		hash_hex(nc, c->to, sizeof(c->to));
		c->reason[0] = c->fix[0] = '\0';
	}
	c->from_gen = cl->generation;
	/*
	 * Failures before the switch are the old config's: only the new
	 * one's own attempts count toward change_attempts, and only a halt
	 * after its rebuild began (a rebuild clears halted).
	 */
	c->attempt0 = cl->rec.attempt;
	c->no_rollback = 0;	/* a new change may roll back again */
	set_phase(cl, CH_SWITCHING, "");
}

/*
 * The new config did not reach serving: rebuild with the last one that
 * did, as kept in the state dir. The file on disk stays as it is.
 */
static void
roll_back(struct cluster *cl)
{
	struct change_rt *c = &cl->chg;
	const struct diag *d = cl->diag;
	struct config *nc;
	char err[ERRLEN], line[sizeof(c->reason) + 100];

	if (d)
		utf8_fmt(c->reason, sizeof(c->reason), "%s: %s", d->code,
		    cl->diag_msg);
	else
		utf8_fmt(c->reason, sizeof(c->reason), "did not reach serving "
		    "in %d attempts", cl->rec.attempt - c->attempt0);
	utf8_copy(c->fix, sizeof(c->fix), d ? d->remedy : "");
	nc = change_good_config(cl, err, sizeof(err));
	if (nc == NULL) {
		c->no_rollback = 1;
		log_node(LOG_ERR, NULL, "cannot roll back to the last good "
		    "config (%s): %s", c->good_sum, err);
		return;
	}
	text_hash_hex(cl->cf->text, c->bad_file, sizeof(c->bad_file));
	c->rolling = 1;
	if (c->rollback_to(cl, nc, err, sizeof(err)) == -1) {
		c->rolling = 0;
		c->no_rollback = 1;
		log_node(LOG_ERR, NULL, "cannot roll back to the last good "
		    "config: %s", err);
		return;
	}
	c->rolling = 0;
	c->rolled_back++;
	set_phase(cl, CH_ROLLED_BACK, "rolled-back");
	utf8_fmt(line, sizeof(line), "change rolled back to the last good "
	    "config (%s, generation %llu): %s", c->good_sum,
	    (unsigned long long)c->good_gen, c->reason);
	log_node(LOG_ERR, NULL, "%s", line);
	history_note(cl, line);
	notify_status("change rolled back to the last good config");
	hooks_on_change(cl->loop, cl->cf, "rolled-back", c->from, c->to,
	    c->reason, cl->generation);
}

int
change_still_rolled_back(const struct cluster *cl, const struct config *nc)
{
	const struct change_rt *c = &cl->chg;

	char sum[sizeof(c->bad_file)];

	text_hash_hex(nc->text, sum, sizeof(sum));
	return c->phase == CH_ROLLED_BACK && c->bad_file[0] &&
	    strcmp(c->bad_file, sum) == 0;
}

/*
 * The switch's rebuild began: a generation after the one it began in, or
 * the new config's commands built (a reload during a teardown joins the
 * rebuild already counted).
 */
static int
switch_began(const struct cluster *cl)
{
	const struct change_rt *c = &cl->chg;

	return cl->generation > c->from_gen || strcmp(c->built, c->to) == 0;
}

void
change_tick(struct cluster *cl)
{
	struct change_rt *c = &cl->chg;

	/* the count started over (tandemctl resume): the switch's from 0 */
	if (c->phase == CH_SWITCHING && cl->rec.attempt < c->attempt0)
		c->attempt0 = cl->rec.attempt;
	if (c->phase == CH_SWITCHING && cl->fsm.state != ST_SERVING &&
	    !c->no_rollback && !c->keep_failed && c->good_text &&
	    strcmp(c->good_sum, c->to) != 0 &&
	    switch_began(cl) && (cl->fsm.halted ||
	    cl->rec.attempt - c->attempt0 >=
	    cl->cf->recovery.change_attempts)) {
		roll_back(cl);
		return;
	}
	/* serving on what was built from it: a paused reload built nothing */
	if (c->phase != CH_SWITCHING || cl->fsm.state != ST_SERVING ||
	    strcmp(c->built, c->to) != 0)
		return;
	c->applied++;
	set_phase(cl, CH_APPLIED, "applied");
	log_info("change applied: %s serves at generation %llu", c->to,
	    (unsigned long long)cl->generation);
	history_note(cl, "configuration change applied: the new config serves");
	hooks_on_change(cl->loop, cl->cf, "applied", c->from, c->to,
	    "the new config serves", cl->generation);
}

const char *
change_phase_name(enum change_phase p)
{
	switch (p) {
	case CH_NONE:
		return "none";
	case CH_CHECKING:
		return "checking";
	case CH_SWITCHING:
		return "switching";
	case CH_REFUSED:
		return "refused";
	case CH_APPLIED:
		return "applied";
	case CH_ROLLED_BACK:
		return "rolled-back";
	}
	return "none";
}

void
change_served(struct cluster *cl)
{
	struct change_rt *c = &cl->chg;
	char sum[sizeof(c->good_sum)], *data;
	json_t *j;

	if (cl->cf->text == NULL)
		return;
	hash_hex(cl->cf, sum, sizeof(sum));
	/*
	 * Only what was built serves: a reload while paused (or one whose
	 * rebuild has not begun) swapped cl->cf for a config never started.
	 */
	if (strcmp(sum, c->built) != 0)
		return;
	/*
	 * Left serving for a reload's rebuild: cl->cf is the new config
	 * already, which has not served yet.
	 */
	if (cl->fsm.state != ST_SERVING && (c->good_text == NULL ||
	    strcmp(sum, c->good_sum) != 0))
		return;
	c->good_last = now_s();
	if (c->good_text == NULL || strcmp(sum, c->good_sum) != 0 ||
	    strcmp(c->good_text, cl->cf->text) != 0 ||
	    c->good_gen != cl->generation) {
		free(c->good_text);
		c->good_text = xstrdup(cl->cf->text);
		utf8_copy(c->good_sum, sizeof(c->good_sum), sum);
		c->good_gen = cl->generation;
		c->good_since = c->good_last;
	}
	/*
	 * The file's own bytes: a rollback rebuilds from exactly what served.
	 * They may name key files and hold vllm.args' key, as the config
	 * does: the state dir is root's, 0750, the file 0640, as
	 * /etc/tandem's.
	 */
	j = json_pack("{s:s, s:I, s:f, s:f, s:s, s:s}", "checksum",
	    c->good_sum, "generation", (json_int_t)c->good_gen,
	    "served_since", c->good_since, "last_served", c->good_last,
	    "file", cl->cf->path ? cl->cf->path : "", "config", c->good_text);
	data = j ? json_dumps(j, JSON_INDENT(1)) : NULL;
	json_decref(j);
	if (data == NULL) {
		log_warnx("state dir: cannot encode last-good.json; not "
		    "written");
		return;
	}
	state_save_good(cl, data);
}

/* change.json: a change that was switching when tandemd stopped resumes. */
static void
load_change(struct cluster *cl)
{
	json_t *c = state_read(cl, "change.json");

	if (c == NULL)
		return;
	if (!json_is_object(c))
		log_warnx("state dir: %s/change.json: not an object; ignored",
		    cl->state_dir);
	else
		change_restore(cl, c);
	json_decref(c);
}

/* last-good.json, as change.c writes it; a file that does not read stays. */
static void
load_good(struct cluster *cl)
{
	json_t *g = state_read(cl, "last-good.json");
	const char *text, *sum;

	if (g == NULL)
		return;
	text = json_string_value(json_object_get(g, "config"));
	sum = json_string_value(json_object_get(g, "checksum"));
	if (text == NULL || sum == NULL ||
	    !json_is_integer(json_object_get(g, "generation"))) {
		log_warnx("state dir: %s/last-good.json: no config, checksum "
		    "and generation; ignored", cl->state_dir);
		json_decref(g);
		return;
	}
	free(cl->chg.good_text);
	cl->chg.good_text = xstrdup(text);
	utf8_copy(cl->chg.good_sum, sizeof(cl->chg.good_sum), sum);
	cl->chg.good_gen = (uint64_t)json_integer_value(json_object_get(g,
	    "generation"));
	cl->chg.good_since = json_number_value(json_object_get(g,
	    "served_since"));
	cl->chg.good_last = json_number_value(json_object_get(g,
	    "last_served"));
	json_decref(g);
}

/* At start: the last config that served, and a change that was switching. */
void
change_load(struct cluster *cl)
{
	load_good(cl);
	load_change(cl);
}
