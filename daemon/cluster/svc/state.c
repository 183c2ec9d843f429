/*
 * The state dir (/var/lib/tandem): what must survive a restart of the
 * daemon. Every file is written whole to a temporary name, fsynced and
 * renamed, so a kill -9 at any moment leaves the old or the new file. A
 * file that does not parse is moved aside with a warning.
 *
 * The writing happens in libuv's thread pool: fsync takes a millisecond
 * here and far more on a busy disk, and meanwhile the loop must keep
 * answering /status and watching the nodes.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster_int.h"

/* Runs in a worker thread: no logging here; -1 with errno set. */
static int
write_atomic(const char *dir, const char *name, const char *data, size_t len)
{
	char *tmp = xprintf("%s/.%s.tmp", dir, name);
	char *dst = xprintf("%s/%s", dir, name);
	int fd, rc = -1, saved = 0;
	ssize_t n;
	size_t off = 0;

	/*
	 * Whoever can write the state dir could plant a symlink at the tmp
	 * name, and tandemd (root) would truncate and write whatever it points
	 * to: the name is removed (a stale file a crash left, or that link),
	 * then created anew, never followed (O_EXCL does not follow a link,
	 * O_NOFOLLOW says so once more). A link planted between the two fails
	 * this write (logged); the next one tries again. Each name has one
	 * writer at a time (state_write): nothing of ours is removed under it.
	 */
	if (unlink(tmp) == -1 && errno != ENOENT)
		goto out;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0640);
	if (fd < 0)
		goto out;
	while (off < len) {
		n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			errno = ENOSPC;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	if (off == len && fsync(fd) == 0 && close(fd) == 0) {
		fd = -1;
		if (rename(tmp, dst) == 0) {
			int dfd = open(dir, O_RDONLY | O_DIRECTORY);

			if (dfd >= 0) {
				fsync(dfd);
				close(dfd);
			}
			rc = 0;
		}
	}
	if (rc == -1) {
		saved = errno;
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		errno = saved;
	}
out:
	free(tmp);
	free(dst);
	return rc;
}

static void
write_work(uv_work_t *req)
{
	struct file_writer *w = req->data;

	w->err = write_atomic(w->dir, w->name, w->data, w->len) == 0 ? 0 :
	    errno;
}

static void	writer_start(uv_loop_t *, struct file_writer *);

static void
write_done(uv_work_t *req, int status)
{
	struct file_writer *w = req->data;

	if (w->err)
		log_warnx("state dir: cannot write %s/%s: %s", w->dir, w->name,
		    strerror(w->err));
	else
		w->written++;
	(void)status;
	free(w->data);
	w->data = NULL;
	if (w->next) {
		w->data = w->next;
		w->len = w->nextlen;
		w->next = NULL;
		writer_start(req->loop, w);
	}
}

static void
writer_start(uv_loop_t *loop, struct file_writer *w)
{
	w->req.data = w;
	if (uv_queue_work(loop, &w->req, write_work, write_done) != 0) {
		/* cannot happen with a live loop; write in place then */
		write_work(&w->req);
		write_done(&w->req, 0);
	}
}

/* Takes data (malloc'd). */
void
state_write(struct cluster *cl, struct file_writer *w, const char *name,
    char *data, size_t len)
{
	w->name = name;
	w->dir = cl->state_dir;
	if (w->data) {
		free(w->next);
		w->next = data;
		w->nextlen = len;
		return;
	}
	w->data = data;
	w->len = len;
	writer_start(cl->loop, w);
}

/* A write in flight or waiting (cluster_free lets them finish). */
int
state_writing(const struct cluster *cl)
{
	return cl->w_state.data || cl->hist.w.data || cl->chg.w_good.data ||
	    cl->chg.w_change.data;
}

void
state_add_part(struct cluster *cl, const struct state_part *p)
{
	size_t i;

	for (i = 0; i < cl->nparts; i++)
		if (cl->parts[i] == p)
			return;
	if (cl->nparts == STATE_PARTS_MAX)
		fatalx("state_add_part: more than %d parts", STATE_PARTS_MAX);
	cl->parts[cl->nparts++] = p;
}

json_t *
state_read(struct cluster *cl, const char *name)
{
	char *path = xprintf("%s/%s", cl->state_dir, name);
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);

	if (j == NULL && access(path, F_OK) == 0) {
		char *aside = xprintf("%s.corrupt", path);

		log_warnx("state dir: %s: %s (line %d); moved aside to %s",
		    path, je.text, je.line, aside);
		rename(path, aside);
		free(aside);
	}
	free(path);
	return j;
}

/* The remedy step only holds for the config it was found with. */
static char *
remedy_key(const struct config *cf)
{
	struct sbuf b;
	size_t i;

	sbuf_init(&b);
	for (i = 0; i < cf->vllm.args.n; i++)
		sbuf_addf(&b, "%s ", cf->vllm.args.v[i]);
	for (i = 0; i < cf->recovery.ngmu_steps; i++)
		sbuf_addf(&b, "%g ", cf->recovery.gmu_steps[i]);
	return sbuf_take(&b);
}

/* The remedy step kept in state.json, if it was found with this config. */
static void
remedy_load(struct cluster *cl, json_t *st)
{
	char *key = remedy_key(cl->cf);

	cl->rec.gmu_step = -1;
	if (json_is_integer(json_object_get(st, "gmu_step")) &&
	    json_is_string(json_object_get(st, "remedy_for")) &&
	    strcmp(json_string_value(json_object_get(st, "remedy_for")),
	    key) == 0) {
		cl->rec.gmu_step = (int)json_integer_value(
		    json_object_get(st, "gmu_step"));
		if (cl->rec.gmu_step >= (int)cl->cf->recovery.ngmu_steps ||
		    cl->rec.gmu_step < -1)
			cl->rec.gmu_step = -1;
	}
	free(key);
}

/*
 * tandemd starts on another config than the file's (the last good one, a
 * rollback kept across the restart): its remedy step, not the file's.
 */
void
state_load_remedy(struct cluster *cl)
{
	json_t *st;

	if ((st = state_read(cl, "state.json"))) {
		remedy_load(cl, st);
		json_decref(st);
	}
}

void
state_load(struct cluster *cl)
{
	json_t *st;
	size_t i;

	if (mkdir(cl->state_dir, 0750) == -1 && errno != EEXIST)
		log_warnx("state dir %s: %s", cl->state_dir, strerror(errno));
	if ((st = state_read(cl, "state.json"))) {
		json_t *g = json_object_get(st, "generation");

		/* a negative count showed as -1 in /status, 2^64-1 in /metrics */
		if (g && (!json_is_integer(g) || json_integer_value(g) < 0))
			log_warnx("state dir: %s/state.json: generation is not "
			    "a count of rebuilds; starting from 0",
			    cl->state_dir);
		else
			cl->generation = (uint64_t)json_integer_value(g);
		remedy_load(cl, st);
		/* the parts other files keep (hwcheck.c's kernel-log cursors) */
		for (i = 0; i < cl->nparts; i++)
			if (json_is_object(json_object_get(st,
			    cl->parts[i]->key)))
				cl->parts[i]->load(cl, json_object_get(st,
				    cl->parts[i]->key));
		json_decref(st);
	}
}

void
state_save(struct cluster *cl)
{
	char *key = remedy_key(cl->cf);
	json_t *st = json_pack("{s:I, s:i, s:s}", "generation",
	    (json_int_t)cl->generation, "gmu_step", cl->rec.gmu_step, "remedy_for",
	    key);
	char *s;
	size_t i;

	for (i = 0; i < cl->nparts; i++)
		json_object_set_new(st, cl->parts[i]->key,
		    cl->parts[i]->save(cl));
	s = json_dumps(st, JSON_COMPACT);

	free(key);
	json_decref(st);
	if (s == NULL) {
		log_warnx("state dir: cannot encode state.json; not written");
		return;
	}
	state_write(cl, &cl->w_state, "state.json", s, strlen(s));
}

void
state_save_good(struct cluster *cl, char *data)
{
	state_write(cl, &cl->chg.w_good, "last-good.json", data, strlen(data));
}

void
state_save_change(struct cluster *cl, char *data)
{
	state_write(cl, &cl->chg.w_change, "change.json", data, strlen(data));
}
