/*
 * daemon/cluster/change.c's rollback (issue 46): only the new config's own
 * failures count toward recovery.change_attempts. The review of the merge
 * found the count read the old config's: a cluster that had recovered
 * after two failed attempts rolled a checked change back on the first
 * tick after its teardown, before the new config was ever tried.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "act_harness.h"
#include "conffile.h"
#include "hooks.h"
#include "config.h"
#include "plan.h"

static int rolled;
static int files_bad;		/* conffile_check_files refuses */

int
conffile_check_files(const struct config *cf, char *err, size_t len)
{
	(void)cf;
	if (files_bad) {
		snprintf(err, len, "ssh.key_file /k: readable by others");
		return -1;
	}
	return 0;
}

/* The runtime's side of a switch and a rollback (funnel.c's, handed to
   change_init), counted. */
static void
apply_change(struct cluster *cl, struct config *nc, char *key)
{
	(void)cl;
	config_free(nc);
	free(key);
}

static int
rollback_to(struct cluster *cl, struct config *nc, char *err,
    size_t len)
{
	(void)cl;
	(void)err;
	(void)len;
	config_free(nc);
	rolled++;
	return 0;
}

void
notify_status(const char *msg)
{
	(void)msg;
}

void
hooks_on_change(uv_loop_t *loop, const struct config *cf, const char *result,
    const char *from, const char *to, const char *reason,
    unsigned long long generation)
{
	(void)loop;
	(void)cf;
	(void)result;
	(void)from;
	(void)to;
	(void)reason;
	(void)generation;
}

/* A switch to another image, from a config that served (last-good). */
static struct config *
switch_image(struct cluster *cl)
{
	char err[256];
	struct config *nc;

	change_init(cl, apply_change, rollback_to);
	cl->chg.good_text = xstrdup(cl->cf->text);
	snprintf(cl->chg.good_sum, sizeof(cl->chg.good_sum), "%016llx",
	    (unsigned long long)plan_hash(cl->cf));
	nc = config_parse(cl->cf->text, "new.json", err, sizeof(err));
	assert_non_null(nc);
	free(nc->container.image);
	nc->container.image = xstrdup("other/image:2");
	change_switching(cl, cl->cf, nc);
	return nc;
}

static void
test_old_failures_do_not_count(void **state)
{
	struct cluster *cl;
	struct config *nc;

	(void)state;
	h_setup_file("etc/tandem.json");
	cl = H.cl;
	rolled = 0;
	/* it served again after two failed attempts, under 60 s ago */
	cl->rec.attempt = 2;
	nc = switch_image(cl);
	cl->fsm.state = ST_ABSENT;
	cl->fsm.action = A_TEARDOWN;
	cl->generation++;		/* the switch's rebuild began */
	change_tick(cl);
	assert_int_equal(rolled, 0);
	/* its own first failure: still under change_attempts (2) */
	cl->rec.attempt++;
	change_tick(cl);
	assert_int_equal(rolled, 0);
	/* its second: back to the last config that served */
	cl->rec.attempt++;
	change_tick(cl);
	assert_int_equal(rolled, 1);
	config_free(nc);
	change_free(cl);
	h_teardown();
}

/*
 * The count starts over during the switch (tandemctl resume after the
 * hourly cap sets it to 0): the new config's failures after it still
 * count, from there.
 */
static void
test_attempts_reset_mid_switch(void **state)
{
	struct cluster *cl;
	struct config *nc;

	(void)state;
	h_setup_file("etc/tandem.json");
	cl = H.cl;
	rolled = 0;
	cl->rec.attempt = 2;		/* the old config's, before it served */
	nc = switch_image(cl);
	cl->fsm.state = ST_ABSENT;
	cl->fsm.action = A_TEARDOWN;
	cl->generation++;
	cl->rec.attempt = 0;		/* resumed */
	change_tick(cl);
	cl->rec.attempt = 2;		/* two failures of the new config */
	change_tick(cl);
	assert_int_equal(rolled, 1);
	config_free(nc);
	change_free(cl);
	h_teardown();
}

/* A halt from before the switch is not the new config's verdict. */
static void
test_old_halt_does_not_count(void **state)
{
	struct cluster *cl;
	struct config *nc;

	(void)state;
	h_setup_file("etc/tandem.json");
	cl = H.cl;
	rolled = 0;
	cl->fsm.halted = 1;
	cl->fsm.state = ST_DEGRADED;
	nc = switch_image(cl);
	change_tick(cl);		/* before its rebuild began */
	assert_int_equal(rolled, 0);
	config_free(nc);
	change_free(cl);
	h_teardown();
}

/* The switch's config takes the runtime's place, as rebuild_for does. */
static void
take(struct cluster *cl, struct config *nc)
{
	config_free(cl->cf);
	cl->cf = nc;
}

/* The new config fails its two attempts after its rebuild began. */
static void
fail_switch(struct cluster *cl)
{
	cl->fsm.state = ST_ABSENT;
	cl->fsm.action = A_TEARDOWN;
	cl->generation++;
	cl->rec.attempt += 2;
	change_tick(cl);
}

/* The config rolled back to gets the file checks a start gives it. */
static void
test_rollback_checks_files(void **state)
{
	struct cluster *cl;

	(void)state;
	h_setup_file("etc/tandem.json");
	cl = H.cl;
	rolled = 0;
	files_bad = 1;
	take(cl, switch_image(cl));
	fail_switch(cl);
	assert_int_equal(rolled, 0);
	assert_int_equal(cl->chg.no_rollback, 1);
	files_bad = 0;
	change_free(cl);
	h_teardown();
}

/* A rollback that could not be made does not stop the next change's. */
static void
test_no_rollback_clears(void **state)
{
	struct cluster *cl;
	struct config *nc;
	char err[256];

	(void)state;
	h_setup_file("etc/tandem.json");
	cl = H.cl;
	rolled = 0;
	files_bad = 1;
	take(cl, switch_image(cl));
	fail_switch(cl);
	assert_int_equal(cl->chg.no_rollback, 1);
	files_bad = 0;
	/* the next change: another image, which fails as well */
	nc = config_parse(cl->cf->text, "new.json", err, sizeof(err));
	assert_non_null(nc);
	free(nc->container.image);
	nc->container.image = xstrdup("other/image:3");
	change_switching(cl, cl->cf, nc);
	take(cl, nc);
	assert_int_equal(cl->chg.no_rollback, 0);
	fail_switch(cl);
	assert_int_equal(rolled, 1);
	change_free(cl);
	h_teardown();
}

/* A reload during a rebuild's teardown joins it: applied when it serves. */
static void
test_teardown_reload_applied(void **state)
{
	struct cluster *cl;
	struct config *nc;

	(void)state;
	h_setup_file("etc/tandem.json");
	cl = H.cl;
	cl->generation = 5;		/* its teardown counted already */
	cl->fsm.state = ST_ABSENT;
	cl->fsm.action = A_TEARDOWN;
	nc = switch_image(cl);
	take(cl, nc);
	change_built(cl);		/* the start built the new config */
	cl->fsm.state = ST_SERVING;
	cl->fsm.action = A_IDLE;
	change_tick(cl);
	assert_int_equal(cl->chg.applied, 1);
	change_free(cl);
	h_teardown();
}

/*
 * A reload during the switch that rebuilds for another key (shm_size):
 * the switch is to that config now, applied when it serves, and a later
 * failure of what then serves is not a rollback.
 */
static void
test_switch_reload_other_key(void **state)
{
	struct cluster *cl;
	struct config *nc;
	char err[256];

	(void)state;
	h_setup_file("etc/tandem.json");
	cl = H.cl;
	rolled = 0;
	take(cl, switch_image(cl));
	cl->fsm.state = ST_ABSENT;
	cl->fsm.action = A_TEARDOWN;
	cl->generation++;
	nc = config_parse(cl->cf->text, "etc/tandem.json", err, sizeof(err));
	assert_non_null(nc);
	free(nc->container.image);
	nc->container.image = xstrdup("other/image:2");
	free(nc->container.shm_size);
	nc->container.shm_size = xstrdup("31g");
	change_switching(cl, cl->cf, nc);
	take(cl, nc);
	change_built(cl);		/* its rebuild built it */
	cl->fsm.state = ST_SERVING;
	cl->fsm.action = A_IDLE;
	change_tick(cl);
	assert_int_equal(cl->chg.applied, 1);
	assert_int_equal(cl->chg.phase, CH_APPLIED);
	change_served(cl);
	/* days later a node fails twice: a recovery, not a rollback */
	cl->fsm.state = ST_ABSENT;
	cl->generation++;
	cl->rec.attempt += 2;
	change_tick(cl);
	assert_int_equal(rolled, 0);
	change_free(cl);
	h_teardown();
}

/* A reload while paused swaps the config, but builds nothing. */
static void
test_paused_reload_not_last_good(void **state)
{
	struct cluster *cl;
	char was[20];
	uint64_t writes;

	(void)state;
	h_setup_file("etc/tandem.json");
	cl = H.cl;
	cl->fsm.state = ST_SERVING;
	cl->fsm.action = A_PAUSED;
	take(cl, switch_image(cl));
	snprintf(was, sizeof(was), "%s", cl->chg.good_sum);
	h_state_remove("last-good.json");	/* drains what was written */
	writes = cl->chg.w_good.written;
	change_served(cl);		/* tandemd stops, still "serving" */
	assert_false(h_state_has("last-good.json"));
	assert_true(cl->chg.w_good.written == writes);
	assert_string_equal(cl->chg.good_sum, was);
	/*
	 * The same config once built does serve: last-good.json written
	 * exactly once (state.c counts the writes that reached the disk; a
	 * second request, waiting behind the first, would be a second write).
	 */
	change_built(cl);
	change_served(cl);
	assert_true(h_state_has("last-good.json"));
	assert_true(cl->chg.w_good.written == writes + 1);
	change_free(cl);
	h_teardown();
}

/*
 * Rolled back, then tandemd restarts with the file unchanged: it starts
 * on the last good config, saying why; a changed file is a new change.
 */
static void
restart_after_rollback(int change_file)
{
	struct cluster *cl;
	char good[20], *good_text, *bad_text, err[256];
	struct config *nc;
	json_t *saved, *cj;

	h_setup_file("etc/tandem.json");
	cl = H.cl;
	rolled = 0;
	take(cl, switch_image(cl));
	snprintf(good, sizeof(good), "%s", cl->chg.good_sum);
	good_text = xstrdup(cl->chg.good_text);
	free(cl->cf->text);
	cl->cf->text = xstrdup(change_file ? "{\"b\":1}" : "{\"a\":1}");
	bad_text = xstrdup("{\"a\":1}");
	fail_switch(cl);
	assert_int_equal(rolled, 1);
	assert_int_equal(cl->chg.phase, CH_ROLLED_BACK);
	saved = h_state_json("change.json");
	assert_non_null(saved);
	change_free(cl);
	h_teardown();

	/* the restart: the file's (bad) config, the state dir's files */
	h_setup_file("etc/tandem.json");
	cl = H.cl;
	nc = config_parse(cl->cf->text, "etc/tandem.json", err, sizeof(err));
	assert_non_null(nc);
	free(nc->container.image);
	nc->container.image = xstrdup("other/image:2");
	free(nc->text);
	nc->text = bad_text;
	take(cl, nc);
	cl->chg.good_text = good_text;
	snprintf(cl->chg.good_sum, sizeof(cl->chg.good_sum), "%s", good);
	h_state_put("change.json", saved);	/* the restart's state dir */
	change_load(cl);
	json_decref(saved);
	nc = change_start_config(cl);
	if (change_file) {
		assert_null(nc);
		assert_int_equal(cl->chg.phase, CH_SWITCHING);
		change_free(cl);
		h_teardown();
		return;
	}
	assert_non_null(nc);
	take(cl, nc);
	change_init(cl, apply_change, rollback_to);
	cj = cluster_config_json(cl);
	assert_string_equal(json_string_value(json_object_get(cj, "running")),
	    "last-known-good");
	assert_non_null(strstr(json_string_value(json_object_get(cj,
	    "message")), "did not reach serving"));
	assert_string_equal(json_string_value(json_object_get(cj,
	    "checksum")), good);
	json_decref(cj);
	/* a reload of the same file keeps the last good config */
	assert_int_equal(change_still_rolled_back(cl, &(struct config){
	    .text = (char *)"{\"a\":1}" }), 1);
	change_free(cl);
	h_teardown();
}

/*
 * Refused while the old config served, then tandemd restarts (a reboot):
 * the file still holds the refused config, which it now starts with
 * unchecked; it is a change from the last good config, rolled back if
 * it does not serve, not a cluster left down.
 */
static void
test_restart_after_refusal(void **state)
{
	struct cluster *cl;
	struct config *nc;
	char err[256], good[20];
	json_t *saved;

	(void)state;
	h_setup_file("etc/tandem.json");
	cl = H.cl;
	rolled = 0;
	change_init(cl, apply_change, rollback_to);
	snprintf(good, sizeof(good), "%016llx",
	    (unsigned long long)plan_hash(cl->cf));
	saved = json_pack("{s:s, s:s, s:s, s:s, s:I, s:f, s:s, s:s, s:b}",
	    "phase", "refused", "result", "refused", "from", good,
	    "to", "0123456789abcdef", "from_generation", (json_int_t)3,
	    "since", 1.0, "reason", "node node2: preflight image: missing",
	    "fix", "load it", "no_rollback", 1);
	assert_non_null(saved);
	/* (the refused one was an apply --no-rollback: not the file's) */
	/* the restart: the file's (refused) config, the state dir's files */
	cl->chg.good_text = xstrdup(cl->cf->text);
	snprintf(cl->chg.good_sum, sizeof(cl->chg.good_sum), "%s", good);
	nc = config_parse(cl->cf->text, "etc/tandem.json", err, sizeof(err));
	assert_non_null(nc);
	free(nc->container.image);
	nc->container.image = xstrdup("other/image:2");
	take(cl, nc);
	cl->generation = 3;
	h_state_put("change.json", saved);	/* the restart's state dir */
	change_load(cl);
	json_decref(saved);
	/* the start builds the file's config */
	change_init(cl, apply_change, rollback_to);
	assert_int_equal(cl->chg.phase, CH_SWITCHING);
	fail_switch(cl);
	assert_int_equal(rolled, 1);
	change_free(cl);
	h_teardown();
}

/*
 * Stopped while switching to image 2; the file holds image 3 at the
 * restart: that one is a change of its own from the last good config,
 * rolled back if it does not serve.
 */
static void
test_restart_mid_switch_other_file(void **state)
{
	struct cluster *cl;
	struct config *nc;
	char err[256];
	json_t *saved;

	(void)state;
	h_setup_file("etc/tandem.json");
	cl = H.cl;
	rolled = 0;
	take(cl, switch_image(cl));
	saved = h_state_json("change.json");
	assert_non_null(saved);
	nc = config_parse(cl->cf->text, "etc/tandem.json", err, sizeof(err));
	assert_non_null(nc);
	free(nc->container.image);
	nc->container.image = xstrdup("other/image:3");
	take(cl, nc);
	cl->chg.phase = CH_NONE;
	h_state_put("change.json", saved);	/* the restart's state dir */
	change_load(cl);
	json_decref(saved);
	change_init(cl, apply_change, rollback_to);
	assert_int_equal(cl->chg.phase, CH_SWITCHING);
	fail_switch(cl);
	assert_int_equal(rolled, 1);
	change_free(cl);
	h_teardown();
}

static void
test_restart_stays_rolled_back(void **state)
{
	(void)state;
	restart_after_rollback(0);
}

static void
test_restart_changed_file_is_new_change(void **state)
{
	(void)state;
	restart_after_rollback(1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_old_failures_do_not_count),
		cmocka_unit_test(test_old_halt_does_not_count),
		cmocka_unit_test(test_attempts_reset_mid_switch),
		cmocka_unit_test(test_rollback_checks_files),
		cmocka_unit_test(test_no_rollback_clears),
		cmocka_unit_test(test_teardown_reload_applied),
		cmocka_unit_test(test_paused_reload_not_last_good),
		cmocka_unit_test(test_switch_reload_other_key),
		cmocka_unit_test(test_restart_stays_rolled_back),
		cmocka_unit_test(test_restart_after_refusal),
		cmocka_unit_test(test_restart_mid_switch_other_file),
		cmocka_unit_test(test_restart_changed_file_is_new_change),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
