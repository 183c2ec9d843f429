/* sd_notify(3): readiness, status and watchdog for systemd (notify.c). */
#ifndef TANDEM_NOTIFY_H
#define TANDEM_NOTIFY_H

#include <uv.h>

void	notify_init(uv_loop_t *);
void	notify_ready(void);
void	notify_status(const char *);
void	notify_extend(double seconds);
void	notify_reloading(void);
void	notify_stopping(void);
void	notify_close(void);

#endif
