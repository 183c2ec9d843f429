/*
 * A reload (SIGHUP), tandemctl apply and tandemctl rollback: the new
 * config read and checked as a start checks it, then handed on by what it
 * changes: a change of what the containers run to change.c (checked on
 * every node first), other nodes or commands to the funnel's rebuild
 * (cluster_rebuild_for), new ssh.* settings to new sessions, the rest
 * taken in place. The config is shared by whoever reads it (config_ref):
 * a preflight that began with the old one keeps it until it ends. This
 * file stands above funnel.c, beside the API's doors: it calls down.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "conffile.h"
#include "tokenfile.h"

static int	reload_config(struct cluster *, const char *, char *, size_t);
static int	take_config(struct cluster *, struct config *, int apply,
		    int no_rollback, char *, size_t);

/*
 * A reload, its outcome kept for /metrics as Prometheus keeps its own
 * (prometheus_config_last_reload_successful and ..._success_timestamp_
 * seconds): an alert on a config left unapplied needs no log search.
 */
int
cluster_reload(struct cluster *cl, const char *file, char *err, size_t errlen)
{
	int rc;

	cl->chg.reloads++;	/* tandemctl reload waits for its verdict */
	rc = reload_config(cl, file, err, errlen);
	cl->cnt.reload_ok = rc != -1;
	if (rc != -1)
		cl->cnt.reload_ok_at = now_s();
	return rc;
}

/*
 * tandemctl apply: the text is checked as tandemd checks its own file
 * (config_parse_buf, then the files it names), and the change it makes
 * is taken as a reload's: checked on every node while serving, refused or
 * applied, rolled back unless no_rollback. The file on disk is not
 * touched (PRODUCT rule 9); /status config.running names the applied one
 * until the next reload of tandemd's own file.
 */
int
cluster_apply_text(struct cluster *cl, const char *text, size_t len,
    const char *path, int no_rollback, char *err, size_t errlen)
{
	struct config *nc;
	int rc;

	cl->chg.reloads++;	/* tandemctl apply waits for its verdict */
	nc = config_parse_buf(path, text, len, err, errlen);
	rc = nc ? take_config(cl, nc, 1, no_rollback, err, errlen) : -1;
	cl->cnt.reload_ok = rc != -1;
	if (rc != -1)
		cl->cnt.reload_ok_at = now_s();
	return rc;
}

/*
 * tandemctl rollback: the last config that served (last-good.json), by
 * the same path as an apply of it. Refused when there is none, or when it
 * is what runs.
 */
int
cluster_rollback(struct cluster *cl, char *err, size_t errlen)
{
	const struct change_rt *c = &cl->chg;
	char sum[sizeof(c->good_sum)], *path;
	int rc;

	if (c->good_text == NULL) {
		seterr(err, errlen, "no last-known-good config: none has "
		    "reached serving yet (the state dir's last-good.json)");
		return -1;
	}
	snprintf(sum, sizeof(sum), "%016llx",
	    (unsigned long long)plan_hash(cl->cf));
	if (strcmp(sum, c->good_sum) == 0 && cl->cf->text &&
	    strcmp(cl->cf->text, c->good_text) == 0 &&
	    c->phase != CH_SWITCHING && c->phase != CH_CHECKING) {
		seterr(err, errlen, "the last-known-good config (%s, "
		    "generation %llu) is what runs already", c->good_sum,
		    (unsigned long long)c->good_gen);
		return -1;
	}
	path = xprintf("%s/last-good.json", cl->state_dir);
	rc = cluster_apply_text(cl, c->good_text, strlen(c->good_text),
	    path, 0, err, errlen);
	free(path);
	return rc;
}

static int
reload_config(struct cluster *cl, const char *file, char *err, size_t errlen)
{
	struct config *nc = conffile_load(file, err, errlen);

	if (nc == NULL)
		return -1;
	return take_config(cl, nc, 0, 0, err, errlen);
}

static int
take_config(struct cluster *cl, struct config *nc, int apply, int no_rollback,
    char *err, size_t errlen)
{
	struct config *old = cl->cf;
	char *tok, *key;
	int ssh_changed;
	size_t i;

	/* A token file others can read fails the reload, as it fails a start. */
	if (token_file_read(nc->api_token_file, 1, &tok, err, errlen) == -1) {
		config_free(nc);
		return -1;
	}
	free(tok);
	/*
	 * And so does an SSH key others can read, a known_hosts others can
	 * write, or a FIFO in either's place (which would hold the loop).
	 */
	if (conffile_check_files(nc, err, errlen) == -1) {
		config_free(nc);
		return -1;
	}
	if (keys_vllm_read(nc, &key, err, errlen) == -1) {
		config_free(nc);
		return -1;
	}
	for (i = 0; i < nc->warnings.n; i++)
		log_warnx("%s", nc->warnings.v[i]);
	/*
	 * The file still holds what was rolled back: the good one stays.
	 * An apply is the operator's word to try it again.
	 */
	if (!apply && change_still_rolled_back(cl, nc)) {
		log_info("the file still holds the config that was rolled back: "
		    "the last good config keeps running (change the file, or "
		    "tandemctl apply)");
		free(key);
		config_free(nc);
		return 0;
	}
	/* a newer file replaces the one still being checked */
	change_supersede(cl);
	if (config_change_differs(old, nc))
		cl->chg.keep_failed = apply && no_rollback;
	if (change_guarded(cl, old, nc)) {
		change_check(cl, nc, key);
		return 2;
	}
	keys_token_take(cl, nc);
	keys_vllm_set(cl, key);
	if (config_cluster_changed(old, nc)) {
		cluster_rebuild_for(cl, nc);
		return 1;
	}
	ssh_changed = config_ssh_changed(old, nc);
	for (i = 0; i < cl->nnodes; i++)
		cl->nodes[i].conf = &nc->nodes[i];
	cl->cf = nc;
	cluster_config_loaded(cl);
	config_free(old);
	if (ssh_changed)
		cluster_remake_sessions(cl);
	/* A reload is the operator's word that a stopped cluster may retry. */
	for (i = 0; i < cl->nnodes; i++) {
		if (cl->nodes[i].fatal) {
			cl->nodes[i].fatal = 0;
			cl->nodes[i].next_connect_ms = 0;
		}
	}
	if (cl->fsm.halted)
		cluster_event(cl, EV_REBUILD, "reloaded after a stop");
	cluster_notify(cl);
	return 0;
}
