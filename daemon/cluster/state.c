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
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster_int.h"

static void	load_good(struct cluster *);
static void	load_change(struct cluster *);

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
	 * writer at a time (writer_put): nothing of ours is removed under it.
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
static void
writer_put(struct cluster *cl, struct file_writer *w, char *data, size_t len)
{
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

/* At exit, outside uv_run: the writes in flight and waiting finish. */
void
state_flush(struct cluster *cl)
{
	while (cl->w_state.data || cl->hist.w.data || cl->chg.w_good.data ||
	    cl->chg.w_change.data || evidence_writing(cl))
		uv_run(cl->loop, UV_RUN_ONCE);
}

static json_t *
load(struct cluster *cl, const char *name)
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

void
state_load(struct cluster *cl)
{
	json_t *st, *evs;
	char *key;

	if (mkdir(cl->state_dir, 0750) == -1 && errno != EEXIST)
		log_warnx("state dir %s: %s", cl->state_dir, strerror(errno));
	if ((st = load(cl, "state.json"))) {
		json_t *g = json_object_get(st, "generation");

		key = remedy_key(cl->cf);
		/* a negative count showed as -1 in /status, 2^64-1 in /metrics */
		if (g && (!json_is_integer(g) || json_integer_value(g) < 0))
			log_warnx("state dir: %s/state.json: generation is not "
			    "a count of rebuilds; starting from 0",
			    cl->state_dir);
		else
			cl->generation = (uint64_t)json_integer_value(g);
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
		/* hwcheck.c: where each node's kernel log is read from */
		if (json_is_object(json_object_get(st, "kernel_log_since")))
			hw_cursors_load(cl, json_object_get(st,
			    "kernel_log_since"));
		json_decref(st);
	}
	if ((evs = load(cl, "events.json")) && !json_is_array(evs))
		log_warnx("state dir: %s/events.json: not a list of events; "
		    "ignored", cl->state_dir);
	if (evs && json_is_array(evs))
		history_load(cl, evs);
	json_decref(evs);
	load_good(cl);
	load_change(cl);
}

void
state_save(struct cluster *cl)
{
	char *key = remedy_key(cl->cf);
	json_t *st = json_pack("{s:I, s:i, s:s, s:o}", "generation",
	    (json_int_t)cl->generation, "gmu_step", cl->rec.gmu_step, "remedy_for",
	    key, "kernel_log_since", hw_cursors_json(cl));
	char *s = json_dumps(st, JSON_COMPACT);

	free(key);
	json_decref(st);
	if (s == NULL) {
		log_warnx("state dir: cannot encode state.json; not written");
		return;
	}
	cl->w_state.name = "state.json";
	writer_put(cl, &cl->w_state, s, strlen(s));
}

void
state_save_good(struct cluster *cl, char *data)
{
	cl->chg.w_good.name = "last-good.json";
	writer_put(cl, &cl->chg.w_good, data, strlen(data));
}

void
state_save_change(struct cluster *cl, char *data)
{
	cl->chg.w_change.name = "change.json";
	writer_put(cl, &cl->chg.w_change, data, strlen(data));
}

/* change.json: a change that was switching when tandemd stopped resumes. */
static void
load_change(struct cluster *cl)
{
	json_t *c = load(cl, "change.json");

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
	json_t *g = load(cl, "last-good.json");
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

/*
 * Written at every event, so one event at a time: a tree of all 1000 would
 * be thousands of allocations per event, and glibc keeps the peak's heap
 * (the soak saw tandemd's RSS climb with the log's length); what is freed
 * goes back at once.
 */
void
state_save_events(struct cluster *cl)
{
	struct sbuf b;
	uint64_t seq, first = cl->hist.seq - cl->hist.n + 1;

	sbuf_init(&b);
	sbuf_addc(&b, '[');
	for (seq = first; seq <= cl->hist.seq; seq++) {
		json_t *e = history_event_json(history_at(&cl->hist, seq));
		char *s = json_dumps(e, JSON_COMPACT);

		json_decref(e);
		/* fields are valid UTF-8 when recorded; never NULL to sbuf */
		if (s == NULL) {
			log_warnx("state dir: event %llu cannot be encoded; "
			    "left out of events.json", (unsigned long long)seq);
			continue;
		}
		if (b.len > 1)
			sbuf_addc(&b, ',');
		sbuf_add(&b, s);
		free(s);
	}
	sbuf_addc(&b, ']');
	cl->hist.w.name = "events.json";
	writer_put(cl, &cl->hist.w, b.s, b.len);
	malloc_trim(0);
}
