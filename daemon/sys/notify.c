/*
 * systemd readiness and watchdog. WATCHDOG=1 comes from a loop timer at
 * half the interval systemd asks for, so a wedged loop stops the pings.
 */
#include <stdio.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "notify.h"

/* systemd watches one process: its one watchdog timer. */
static uv_timer_t	watchdog;
static int		watchdog_on;

static void
ping(uv_timer_t *t)
{
	(void)t;
	sd_notify(0, "WATCHDOG=1");
}

void
notify_init(uv_loop_t *loop)
{
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
		uv_timer_init(loop, &watchdog);
		uv_timer_start(&watchdog, ping, 0, usec / 2000 ? usec / 2000 : 1);
		uv_unref((uv_handle_t *)&watchdog);
		watchdog_on = 1;
	}
}

void
notify_ready(void)
{
	sd_notify(0, "READY=1");
}

void
notify_status(const char *s)
{
	sd_notifyf(0, "STATUS=%s", s);
}

/* Waiting for nodes or the model takes minutes: more start-up time. */
void
notify_extend(double seconds)
{
	sd_notifyf(0, "EXTEND_TIMEOUT_USEC=%llu",
	    (unsigned long long)(seconds * 1e6));
}

void
notify_reloading(void)
{
	sd_notify(0, "RELOADING=1");
}

void
notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}

void
notify_close(void)
{
	if (watchdog_on) {
		uv_close((uv_handle_t *)&watchdog, NULL);
		watchdog_on = 0;
	}
}
