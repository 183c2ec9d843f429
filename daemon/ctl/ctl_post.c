/*
 * tandemctl's changes through tandemd's API (tandemctl(1)): rebuild (and
 * its --wait), pause, resume, reload, apply and rollback, each with the
 * token as tandemd reads it.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conffile.h"
#include "config.h"
#include "ctl.h"
#include "tokenfile.h"

static const char	*token_file;	/* --token-file: ctl_post_token_file */

/* The token as tandemd reads it (token_file_read), to send with a POST. */
char *
ctl_post_token(const char *cfgfile)
{
	const char *path = token_file;
	struct config *cf = NULL;
	char err[ERRLEN];
	char *tok = NULL;

	if (path == NULL) {
		cf = conffile_load(cfgfile, err, sizeof(err));
		path = cf ? cf->api_token_file : NULL;
	}
	if (token_file_read(path, 0, &tok, err, sizeof(err)) == -1)
		fprintf(stderr, "tandemctl: %s\n", err);
	else if (tok == NULL && path != NULL)
		fprintf(stderr, "tandemctl: no token: %s\n", err);
	else if (tok == NULL)
		fprintf(stderr, "tandemctl: no token: pass --token-file or set "
		    "api_token_file in %s\n", cfgfile);
	config_free(cf);
	return tok;
}

/*
 * A POST's answer for the operator: 202's "ok" on stdout, any other its
 * "error" on stderr. 0 for 202, else 1; out is freed.
 */
static int
post_said(const char *path, long code, struct sbuf *out)
{
	json_t *j = json_loads(out->s ? out->s : "", 0, NULL);

	if (code == 202)
		printf("%s\n", ctl_show_str(j, "ok"));
	else
		fprintf(stderr, "tandemctl: %s answered %ld: %s\n", path, code,
		    ctl_show_str(j, "error"));
	fflush(stdout);
	json_decref(j);
	sbuf_free(out);
	return code == 202 ? 0 : 1;
}

int
ctl_post(const char *cfgfile, const char *path)
{
	char *token = ctl_post_token(cfgfile);
	struct sbuf out;
	long code;

	if (token == NULL)
		return 2;
	sbuf_init(&out);
	code = ctl_api("POST", path, token, &out);
	free(token);
	if (code < 0) {
		sbuf_free(&out);
		return 1;
	}
	return post_said(path, code, &out);
}

/* The newest event's seq: a wait follows only what comes after it. */
static int
last_event(long long *seq)
{
	struct sbuf out;
	json_t *a;

	sbuf_init(&out);
	if (ctl_show_get_events(0, &out) == -1) {
		sbuf_free(&out);
		return -1;
	}
	a = json_loads(out.s ? out.s : "", 0, NULL);
	sbuf_free(&out);
	if (!json_is_array(a)) {
		json_decref(a);
		fprintf(stderr, "tandemctl: /events: not a list of events\n");
		return -1;
	}
	*seq = json_integer_value(json_object_get(json_array_get(a,
	    json_array_size(a) - 1), "seq"));
	json_decref(a);
	return 0;
}

/*
 * Where an event leaves the rebuild: 0 serving (done), 1 ended without
 * serving (a failed step backs off, retries stopped leave the action idle,
 * or someone paused), -1 still on its way (teardown, starting, waiting,
 * waiting for a node to come back).
 */
static int
rebuild_end(json_t *e)
{
	const char *to = ctl_show_str(e, "to"), *action = ctl_show_str(e,
	    "action");

	if (strcmp(to, "serving") == 0)
		return 0;
	if (strcmp(action, "backoff") == 0 || strcmp(action, "idle") == 0 ||
	    strcmp(action, "paused") == 0)
		return 1;
	return -1;
}

/* Why the rebuild ended without serving, from /status. */
static void
print_failure(void)
{
	struct sbuf out;
	json_t *st, *diag;

	sbuf_init(&out);
	st = ctl_api("GET", "/status", NULL, &out) == 200 ?
	    json_loads(out.s ? out.s : "", 0, NULL) : NULL;
	diag = json_object_get(st, "diagnosis");
	if (json_is_object(diag))
		fprintf(stderr, "tandemctl: rebuild failed: diagnosis %s: %s\n"
		    "  remedy: %s\n", ctl_show_str(diag, "code"),
		    ctl_show_str(diag, "message"),
		    ctl_show_str(diag, "remedy"));
	else
		fprintf(stderr, "tandemctl: rebuild ended without serving: "
		    "%s/%s\n", ctl_show_str(st, "state"), ctl_show_str(st,
		    "action"));
	json_decref(st);
	sbuf_free(&out);
}

/*
 * tandemctl rebuild --wait: asks for the rebuild, then follows /events
 * with a line per step until the cluster serves (exit 0) or the rebuild
 * ends in a diagnosis (exit 1), like tandemd --once.
 */
int
ctl_post_rebuild_wait(const char *cfgfile, const char *path)
{
	const struct timespec poll = { 0, 500 * 1000 * 1000 };
	uint64_t t0;
	long long seq;
	struct sbuf out;
	json_t *a, *e;
	size_t i;
	int rc, end = -1;

	if (last_event(&seq) == -1)
		return 1;
	if ((rc = ctl_post(cfgfile, path)) != 0)
		return rc;
	t0 = mono_ms();
	while (end < 0) {
		nanosleep(&poll, NULL);
		sbuf_init(&out);
		if (ctl_show_get_events(seq, &out) == -1) {
			sbuf_free(&out);
			return 1;
		}
		a = json_loads(out.s ? out.s : "", 0, NULL);
		sbuf_free(&out);
		if (!json_is_array(a)) {
			json_decref(a);
			fprintf(stderr, "tandemctl: /events: not a list of "
			    "events\n");
			return 1;
		}
		json_array_foreach(a, i, e) {
			seq = json_integer_value(json_object_get(e, "seq"));
			printf("tandemctl rebuild: %.0f s: %s/%s (%s)\n",
			    (double)(mono_ms() - t0) / 1000.0, ctl_show_str(e,
			    "to"),
			    ctl_show_str(e, "action"), ctl_show_str(e,
			    "reason"));
			if ((end = rebuild_end(e)) >= 0)
				break;
		}
		json_decref(a);
		fflush(stdout);
	}
	if (end == 1)
		print_failure();
	return end;
}

/*
 * tandemctl reload: the unit's ExecReload, so that systemctl reload fails
 * when tandemd keeps its running config. SIGHUP to tandemd, then /status
 * until change.reloads counts it (tandemd counts each one as it handles
 * it), and while the change it began is being checked on the nodes (the
 * old cluster serves meanwhile): 1 when the file was refused or the
 * change's check failed, with why on stderr. A tandemd without the
 * counter only gets the signal.
 */
#define RELOAD_POLL_MS		200
#define RELOAD_TIMEOUT_S	80	/* below the unit's TimeoutStartSec */

/*
 * /status until change.reloads passes before, and while the change that
 * reload (or apply) began is being checked on the nodes: 1 when it was
 * refused, with why on stderr.
 */
static int
wait_verdict(const char *cmd, json_int_t before, double timeout_s)
{
	const struct timespec poll = { 0, RELOAD_POLL_MS * 1000 * 1000 };
	uint64_t t0 = mono_ms();
	json_int_t now;
	json_t *st, *c;
	int rc;

	if (timeout_s <= 0)
		timeout_s = ctl_api_verdict_s(RELOAD_TIMEOUT_S);
	for (;;) {
		nanosleep(&poll, NULL);
		if ((double)(mono_ms() - t0) / 1000.0 > timeout_s) {
			fprintf(stderr, "tandemctl %s: no verdict within %g "
			    "s (tandemctl status says where it is)\n", cmd,
			    timeout_s);
			return 1;
		}
		if ((st = ctl_show_get_status(1)) == NULL)
			continue;
		c = json_object_get(st, "change");
		now = ctl_show_int_or(c, "reloads");
		if (now <= before || (ctl_show_int_or(c, "reload") == now &&
		    strcmp(ctl_show_str(c, "phase"), "checking") == 0)) {
			json_decref(st);
			continue;
		}
		rc = 0;
		if (!json_is_true(json_object_get(c, "last_reload_ok"))) {
			fprintf(stderr, "tandemctl %s: the file was refused, "
			    "the running config stays (the journal says why)\n",
			    cmd);
			rc = 1;
		} else if (ctl_show_int_or(c, "reload") == now &&
		    strcmp(ctl_show_str(c, "phase"), "refused") == 0) {
			fprintf(stderr, "tandemctl %s: change refused, the "
			    "running config stays: %s\n  fix: %s\n", cmd,
			    ctl_show_str(c, "reason"), ctl_show_str(c, "fix"));
			rc = 1;
		}
		json_decref(st);
		return rc;
	}
}

/*
 * A SIGHUP to another process would end it (HUP's default): the pid must
 * be the one /status says answers (ours), or, without that, a process
 * named tandemd. -1 with why on stderr.
 */
static int
not_tandemd(long pid, json_int_t ours)
{
	char path[64], comm[32] = "";
	FILE *f;

	if (ours > 0) {
		if (ours == pid)
			return 0;
		fprintf(stderr, "tandemctl reload: pid %ld is not tandemd's: "
		    "the tandemd at the API is pid %lld; nothing sent\n", pid,
		    (long long)ours);
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	if ((f = fopen(path, "r")) != NULL) {
		if (fgets(comm, sizeof(comm), f) == NULL)
			comm[0] = '\0';
		fclose(f);
	}
	comm[strcspn(comm, "\n")] = '\0';
	if (strcmp(comm, "tandemd") == 0)
		return 0;
	fprintf(stderr, "tandemctl reload: pid %ld is not tandemd (%s); "
	    "nothing sent\n", pid, comm[0] ? comm : "no such process");
	return -1;
}

int
ctl_post_reload(const char *pidarg, double timeout_s)
{
	const char *p = pidarg ? pidarg : getenv("MAINPID");
	json_int_t before, ours = -1;
	json_t *st;
	char *end;
	long pid;

	if (p == NULL || (pid = strtol(p, &end, 10)) <= 1 || *end != '\0') {
		fprintf(stderr, "tandemctl reload: no tandemd process: --pid "
		    "PID, or $MAINPID as systemd sets it\n");
		return 2;
	}
	if (timeout_s <= 0)
		timeout_s = ctl_api_verdict_s(RELOAD_TIMEOUT_S);
	/*
	 * No /status (the API unreachable, its socket moved by this very
	 * edit): the reload still goes out, as a plain kill -HUP would send
	 * it, and the verdict is the journal's.
	 */
	before = -1;
	if ((st = ctl_show_get_status(0)) != NULL) {
		before = ctl_show_int_or(json_object_get(st, "change"),
		    "reloads");
		ours = ctl_show_int_or(st, "pid");
		json_decref(st);
	} else
		fprintf(stderr, "tandemctl reload: the API does not answer; "
		    "reloading without waiting for the verdict\n");
	if (not_tandemd(pid, ours) == -1)
		return 1;
	if (kill((pid_t)pid, SIGHUP) == -1) {
		fprintf(stderr, "tandemctl reload: kill -HUP %ld: %s\n", pid,
		    strerror(errno));
		return 1;
	}
	if (before < 0)
		return 0;
	return wait_verdict("reload", before, timeout_s);
}

/*
 * tandemctl apply FILE and tandemctl rollback: a POST to tandemd (apply's
 * with the file's text, parsed by tandemd as its own file), then its
 * verdict as tandemctl reload waits for it. The file is read here, with
 * the operator's rights: tandemd reads no path it is handed.
 */
int
ctl_post_apply(const char *cfgfile, const char *applyfile, int no_rollback,
    double timeout_s)
{
	char *token, *path, *esc, *abs;
	json_int_t before;
	struct sbuf body, out;
	char buf[8192];
	json_t *st;
	CURL *cu;
	FILE *fp;
	size_t n;
	long code;
	int rc;

	sbuf_init(&body);
	if (applyfile) {
		if ((fp = fopen(applyfile, "r")) == NULL) {
			fprintf(stderr, "tandemctl apply: %s: %s\n", applyfile,
			    strerror(errno));
			return 2;
		}
		while ((n = fread(buf, 1, sizeof(buf), fp)) > 0 &&
		    body.len <= CONFFILE_MAX)
			sbuf_addn(&body, buf, n);
		if (ferror(fp) || body.len > CONFFILE_MAX) {
			fprintf(stderr, "tandemctl apply: %s: %s\n", applyfile,
			    ferror(fp) ? strerror(errno) : "larger than 4 MiB; "
			    "not a tandem config");
			fclose(fp);
			sbuf_free(&body);
			return 2;
		}
		fclose(fp);
	}
	if ((token = ctl_post_token(cfgfile)) == NULL) {
		sbuf_free(&body);
		return 2;
	}
	if ((st = ctl_show_get_status(0)) == NULL) {
		free(token);
		sbuf_free(&body);
		return 1;
	}
	before = ctl_show_int_or(json_object_get(st, "change"), "reloads");
	json_decref(st);
	if (applyfile) {
		abs = realpath(applyfile, NULL);
		cu = curl_easy_init();
		esc = cu ? curl_easy_escape(cu, abs ? abs : applyfile, 0) :
		    NULL;
		path = xprintf("/apply?file=%s%s", esc ? esc : "",
		    no_rollback ? "&no_rollback=1" : "");
		curl_free(esc);
		curl_easy_cleanup(cu);
		free(abs);
	} else
		path = xstrdup("/rollback");
	sbuf_init(&out);
	code = ctl_api_body("POST", path, token, applyfile ? &body : NULL,
	    &out);
	free(token);
	sbuf_free(&body);
	if (code < 0) {
		free(path);
		sbuf_free(&out);
		return 1;
	}
	rc = post_said(path, code, &out);
	free(path);
	if (rc != 0)
		return 1;
	if (before < 0)
		return 0;
	return wait_verdict(applyfile ? "apply" : "rollback", before,
	    timeout_s);
}

void
ctl_post_token_file(const char *path)
{
	token_file = path;
}
