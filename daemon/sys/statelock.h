/*
 * One tandemd per state dir: an flock(2) on DIR/tandemd.lock, held for
 * the daemon's life, with the holder's pid written in it so that a second
 * daemon can say whose it is.
 */
#ifndef TANDEM_STATELOCK_H
#define TANDEM_STATELOCK_H

#include <stddef.h>

enum state_lock_rc {
	STATE_LOCK_OK,
	STATE_LOCK_HELD,	/* another tandemd has it: exit 1 */
	STATE_LOCK_BAD,		/* the dir is missing or not ours: exit 2 */
};

/*
 * Creates DIR (mode 0750) when create is set and it is missing (the
 * default /var/lib/tandem outside systemd, whose StateDirectory= makes
 * it), then takes the lock. The lock's fd is close-on-exec (hooks and
 * their children do not hold it) and stays open until the process ends.
 */
enum state_lock_rc state_lock(const char *dir, int create, char *err,
		    size_t errlen);

#endif
