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
#include <cmocka.h>

#include "act_harness.h"
#include "hooks.h"
#include "config.h"
#include "plan.h"

static int rolled;

/* The runtime's side of a switch and a rollback, counted. */
void
cluster_apply_change(struct cluster *cl, struct config *nc, char *key)
{
	(void)cl;
	config_free(nc);
	free(key);
}

int
cluster_rollback_to(struct cluster *cl, struct config *nc, char *err,
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
state_save_good(struct cluster *cl, char *data)
{
	(void)cl;
	free(data);
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

void
state_save_change(struct cluster *cl, char *data)
{
	(void)cl;
	free(data);
}

/* No state dir here: change_load reads nothing. */
json_t *
state_read(struct cluster *cl, const char *name)
{
	(void)cl;
	(void)name;
	return NULL;
}

/* A switch to another image, from a config that served (last-good). */
static struct config *
switch_image(struct cluster *cl)
{
	char err[256];
	struct config *nc;

	change_init(cl, cluster_apply_change, cluster_rollback_to);
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_old_failures_do_not_count),
		cmocka_unit_test(test_old_halt_does_not_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
