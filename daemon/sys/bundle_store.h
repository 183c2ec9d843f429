/*
 * The evidence bundles on disk (bundle_store.c): under the state dir's
 * bundles/, written whole (a temporary file, fsync, rename), rotated by
 * lib/api/bundle.c's rule, the newest served by GET /bundle.
 */
#ifndef TANDEM_BUNDLE_STORE_H
#define TANDEM_BUNDLE_STORE_H

#include <stddef.h>
#include <stdint.h>

/* Where the bundles live: STATE_DIR/bundles (made on the first write). */
void	bundle_store_init(const char *state_dir);
/*
 * Writes a bundle named NAME (bundle_name) and removes the old ones
 * beyond BUNDLE_KEEP / BUNDLE_KEEP_BYTES. Blocks on the disk: run it off
 * the loop (uv_queue_work), as state.c writes state.json. Returns 0, or
 * -1 with a message.
 */
int	bundle_store_write(const char *name, const void *data, size_t len,
	    char *err, size_t errlen);
/*
 * The newest bundle, opened for reading: its fd (the caller closes it, or
 * hands it to MHD), name and size. -1 with a message when there is none.
 */
int	bundle_store_open_latest(char *name, size_t namelen, uint64_t *size,
	    char *err, size_t errlen);

#endif
