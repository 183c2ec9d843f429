/*
 * Reading nvidia-smi's and npu-smi's answers (accel.h). Both are read
 * defensively: a line tandem does not recognise is skipped, numbers out of
 * range are "not reported", and an answer with nothing readable in it is
 * "could not tell" with the tool's own first words, never a pass.
 *
 * npu-smi info prints two tables of "|"-separated cells (the recorded
 * texts are in tests/unit/data/npu-smi/). The chip table has two rows per
 * chip:
 *   | 0     910B3   | OK           | 97.9   34    0    / 0        |
 *   | 0             | 0000:C1:00.0 | 0      0    / 0    3408 / 65536 |
 * (NPU ID and name; health; power, temperature, hugepages) then (chip, on
 * the A3 also its physical ID; bus; AICore %, memory used / total, HBM
 * used / total, the slash glued to a five-digit number). The process table
 * has one row per process and chip, or one "No running processes found in
 * NPU n" line per idle NPU:
 *   | 2       0     | 1333928       |  python3  | 37709  |
 * Cells, never column offsets: the first cell is 22 or 27 wide by version.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "utf8.h"

/* Reading ----------------------------------------------------------------- */

/* A whole decimal number in [0, max], or -1. */
static long long
whole(const char *s, size_t len, long long max)
{
	char buf[24], *end;
	long long v;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!isdigit((unsigned char)buf[0]))
		return -1;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return -1;
	return v;
}

/* The first line of s (at most len), for "said". */
static void
first_words(char *dst, size_t dstlen, const char *s, size_t len)
{
	size_t n;

	while (len > 0 && (*s == '\n' || *s == ' ' || *s == '\r')) {
		s++;
		len--;
	}
	for (n = 0; n < len && s[n] != '\n'; n++)
		;
	utf8_copyn(dst, dstlen, s, n);
}

/* Splits a line into at most max cells between '|', each trimmed. */
struct cell {
	const char	*s;
	size_t		 len;
};

static size_t
cells(const char *line, size_t len, struct cell *c, size_t max)
{
	const char *p = line, *end = line + len, *bar;
	size_t n = 0;

	if (len == 0 || *p != '|')
		return 0;
	for (p++; p < end && n < max; p = bar + 1) {
		bar = memchr(p, '|', (size_t)(end - p));
		if (bar == NULL)
			break;
		c[n].s = p;
		c[n].len = (size_t)(bar - p);
		while (c[n].len && isspace((unsigned char)c[n].s[0])) {
			c[n].s++;
			c[n].len--;
		}
		while (c[n].len && isspace((unsigned char)c[n].s[c[n].len - 1]))
			c[n].len--;
		n++;
	}
	return n;
}

/* Whitespace- (and '/'-) separated words of a cell. */
static size_t
words(const struct cell *c, struct cell *w, size_t max, int slash)
{
	const char *p = c->s, *end = c->s + c->len;
	size_t n = 0;

	while (p < end && n < max) {
		while (p < end && (isspace((unsigned char)*p) ||
		    (slash && *p == '/')))
			p++;
		if (p == end)
			break;
		w[n].s = p;
		while (p < end && !isspace((unsigned char)*p) &&
		    !(slash && *p == '/'))
			p++;
		w[n].len = (size_t)(p - w[n].s);
		n++;
	}
	return n;
}

static int
cell_is(const struct cell *c, const char *word)
{
	size_t l = strlen(word);

	return c->len >= l && memcmp(c->s, word, l) == 0;
}

static void
add_dev(struct accel_info *ai, int id, int chip, const struct cell *name,
    const struct cell *health)
{
	struct accel_dev *d;

	if (ai->ndev == ACCEL_DEVS_MAX) {
		ai->more_devs++;
		return;
	}
	d = &ai->dev[ai->ndev++];
	memset(d, 0, sizeof(*d));
	d->id = id;
	d->chip = chip;
	d->used_mib = d->total_mib = -1;
	if (name)
		utf8_copyn(d->name, sizeof(d->name), name->s, name->len);
	if (health)
		utf8_copyn(d->health, sizeof(d->health), health->s,
		    health->len);
}

static void
add_proc(struct accel_info *ai, int dev, int chip, long pid,
    const char *name, size_t namelen, long long mib)
{
	struct accel_proc *p;

	if (ai->nproc == ACCEL_PROCS_MAX) {
		ai->more_procs++;
		return;
	}
	p = &ai->proc[ai->nproc++];
	p->dev = dev;
	p->chip = chip;
	p->pid = pid;
	p->mib = mib;
	utf8_copyn(p->name, sizeof(p->name), name, namelen);
}

/* Counts the distinct NPU IDs among the devices (chips) read. */
static void
count_npus(struct accel_info *ai)
{
	size_t i, j;

	ai->nnpus = 0;
	for (i = 0; i < ai->ndev; i++) {
		for (j = 0; j < i; j++)
			if (ai->dev[j].id == ai->dev[i].id)
				break;
		if (j == i)
			ai->nnpus++;
	}
}

/*
 * npu-smi info. state: the NPU of the last chip row A (its ID and name,
 * health), waiting for its row B (chip, bus, memory).
 */
static void
npu_info(const char *out, size_t len, struct accel_info *ai)
{
	const char *p = out, *end = out + len, *nl;
	int in_procs = 0, pending = 0, pend_id = 0;
	struct cell pend_name = { "", 0 }, pend_health = { "", 0 };

	for (; p < end; p = nl + 1) {
		struct cell c[8], w[8];
		size_t nc, nw;
		long long a, b, m;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		nc = cells(p, (size_t)(nl - p), c, 8);
		if (nc == 0)
			goto next;
		if (nc >= 2 && cell_is(&c[1], "Process id")) {
			in_procs = 1;		/* the process table's header */
			ai->procs_read = 1;
			goto next;
		}
		if (!in_procs && nc >= 3) {
			nw = words(&c[0], w, 8, 0);
			if (nw >= 2 && (a = whole(w[0].s, w[0].len, 1 << 20)) >= 0 &&
			    memchr(c[1].s, ':', c[1].len) == NULL &&
			    c[1].len > 0 && isalpha((unsigned char)c[1].s[0])) {
				/* row A: NPU ID, name | health | power ... */
				pending = 1;
				pend_id = (int)a;
				pend_name = w[1];
				pend_health = c[1];
			} else if (pending && nw >= 1 &&
			    (b = whole(w[0].s, w[0].len, 1 << 20)) >= 0 &&
			    memchr(c[1].s, ':', c[1].len) != NULL) {
				/* row B: chip [phy] | bus | aicore mem / mem hbm / hbm */
				struct accel_dev *d;
				long long v[4];
				size_t k;

				add_dev(ai, pend_id, (int)b, &pend_name,
				    &pend_health);
				pending = 0;
				nw = words(&c[2], w, 8, 1);
				if (ai->more_devs || nw < 4)
					goto next;
				d = &ai->dev[ai->ndev - 1];
				for (k = 0; k < 4; k++)
					v[k] = whole(w[nw - 4 + k].s,
					    w[nw - 4 + k].len, 1LL << 40);
				/* HBM is the device memory; older cards: DDR */
				if (v[3] > 0) {
					d->used_mib = v[2];
					d->total_mib = v[3];
				} else if (v[1] > 0) {
					d->used_mib = v[0];
					d->total_mib = v[1];
				}
			}
			goto next;
		}
		if (!in_procs)
			goto next;
		if (nc == 1 && cell_is(&c[0], "No running processes found"))
			goto next;
		if (nc < 4)
			goto next;
		nw = words(&c[0], w, 8, 0);
		if (nw < 2 || (a = whole(w[0].s, w[0].len, 1 << 20)) < 0 ||
		    (b = whole(w[1].s, w[1].len, 1 << 20)) < 0)
			goto next;
		m = whole(c[1].s, c[1].len, 0x7fffffff);
		if (m <= 0)
			goto next;
		add_proc(ai, (int)a, (int)b, (long)m, c[2].s, c[2].len,
		    whole(c[3].s, c[3].len, 1LL << 40));
next:
		if (nl == end)
			break;
	}
	count_npus(ai);
}

/* npu-smi info -l: "Total Count : 8", then "NPU ID : n", "Chip Count : c". */
static void
npu_list(const char *out, size_t len, struct accel_info *ai)
{
	const char *p = out, *end = out + len, *nl;
	long long total = -1, id = -1, v;

	for (; p < end; p = nl + 1) {
		const char *colon, *k, *val;
		size_t klen, vlen;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		colon = memchr(p, ':', (size_t)(nl - p));
		if (colon == NULL)
			goto next;
		for (k = p; k < colon && isspace((unsigned char)*k); k++)
			;
		for (klen = (size_t)(colon - k); klen &&
		    isspace((unsigned char)k[klen - 1]); klen--)
			;
		for (val = colon + 1; val < nl && isspace((unsigned char)*val);
		    val++)
			;
		for (vlen = (size_t)(nl - val); vlen &&
		    isspace((unsigned char)val[vlen - 1]); vlen--)
			;
		v = whole(val, vlen, 1 << 20);
		if (klen == 11 && memcmp(k, "Total Count", 11) == 0)
			total = v;
		else if (klen == 6 && memcmp(k, "NPU ID", 6) == 0)
			id = v;
		else if (klen == 10 && memcmp(k, "Chip Count", 10) == 0 &&
		    id >= 0 && v >= 0) {
			long long c;

			/* one device per chip, as ASCEND_RT_VISIBLE_DEVICES counts */
			for (c = 0; c < (v ? v : 1); c++)
				add_dev(ai, (int)id, (int)c, NULL, NULL);
			id = -1;
		}
next:
		if (nl == end)
			break;
	}
	count_npus(ai);
	if (total >= 0 && total != ai->nnpus)
		ai->answer = AA_UNREADABLE;
}

/* nvidia-smi -L: "GPU 0: NVIDIA GB10 (UUID: GPU-...)". */
static void
nv_list(const char *out, size_t len, struct accel_info *ai)
{
	const char *p = out, *end = out + len, *nl;

	for (; p < end; p = nl + 1) {
		const char *colon, *paren;
		long long id;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		if (nl - p > 4 && memcmp(p, "GPU ", 4) == 0 &&
		    (colon = memchr(p, ':', (size_t)(nl - p))) != NULL &&
		    (id = whole(p + 4, (size_t)(colon - p - 4), 1 << 20)) >= 0) {
			struct cell name;

			name.s = colon + 1;
			while (name.s < nl && *name.s == ' ')
				name.s++;
			paren = memchr(name.s, '(', (size_t)(nl - name.s));
			name.len = (size_t)((paren ? paren : nl) - name.s);
			while (name.len && name.s[name.len - 1] == ' ')
				name.len--;
			add_dev(ai, (int)id, 0, &name, NULL);
		}
		if (nl == end)
			break;
	}
}

/* CSV fields of one line, each trimmed. */
static size_t
csv(const char *p, const char *nl, struct cell *f, size_t max)
{
	size_t n = 0;

	while (n < max) {
		const char *comma = memchr(p, ',', (size_t)(nl - p));
		const char *e = comma ? comma : nl;

		while (p < e && *p == ' ')
			p++;
		f[n].s = p;
		f[n].len = (size_t)(e - p);
		while (f[n].len && (f[n].s[f[n].len - 1] == ' ' ||
		    f[n].s[f[n].len - 1] == '\r'))
			f[n].len--;
		n++;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	return n;
}

/*
 * nvidia-smi --query-gpu=index,name,memory.used,memory.total,driver_version
 * and --query-compute-apps=pid,used_memory,process_name
 * --format=csv,noheader,nounits:
 * "[N/A]" where the driver reports nothing (GB10's unified memory). The
 * driver's version is the same on every line (one driver per node).
 */
static void
nv_csv(enum accel_query q, const char *out, size_t len, struct accel_info *ai)
{
	const char *p = out, *end = out + len, *nl;

	for (; p < end; p = nl + 1) {
		struct cell f[6];
		size_t n;
		long long a;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		n = csv(p, nl, f, 6);
		if (q == AQ_MEMORY && n >= 4 &&
		    (a = whole(f[0].s, f[0].len, 1 << 20)) >= 0) {
			add_dev(ai, (int)a, 0, &f[1], NULL);
			if (!ai->more_devs) {
				ai->dev[ai->ndev - 1].used_mib = whole(f[2].s,
				    f[2].len, 1LL << 40);
				ai->dev[ai->ndev - 1].total_mib = whole(f[3].s,
				    f[3].len, 1LL << 40);
			}
			if (n >= 5 && f[4].len > 0 && f[4].len <
			    sizeof(ai->driver) && isdigit((unsigned char)
			    f[4].s[0]))
				utf8_copyn(ai->driver, sizeof(ai->driver),
				    f[4].s, f[4].len);
		} else if (q == AQ_PROCS && n >= 2 &&
		    (a = whole(f[0].s, f[0].len, 0x7fffffff)) > 0)
			add_proc(ai, -1, 0, (long)a, n >= 3 ? f[2].s : "",
			    n >= 3 ? f[2].len : 0, whole(f[1].s, f[1].len,
			    1LL << 40));
		if (nl == end)
			break;
	}
	if (q == AQ_PROCS)
		ai->procs_read = 1;	/* no line: no process */
}

void
accel_parse(enum accel a, enum accel_query q, int exit_code,
    const char *out, size_t outlen, const char *err, struct accel_info *ai)
{
	memset(ai, 0, sizeof(*ai));
	ai->accel = a;
	ai->query = q;
	if (a == ACCEL_NONE) {
		ai->answer = AA_NOT_ASKED;
		utf8_copy(ai->said, sizeof(ai->said), "container.accelerator "
		    "is none");
		return;
	}
	if (exit_code == 127) {
		ai->answer = AA_NO_TOOL;
		first_words(ai->said, sizeof(ai->said), err ? err : "",
		    err ? strlen(err) : 0);
		return;
	}
	if (exit_code != 0) {
		ai->answer = AA_UNREADABLE;
		if (err && *err)
			first_words(ai->said, sizeof(ai->said), err,
			    strlen(err));
		else
			first_words(ai->said, sizeof(ai->said), out, outlen);
		if (ai->said[0] == '\0')
			snprintf(ai->said, sizeof(ai->said), "exit %d, no "
			    "output", exit_code);
		return;
	}
	ai->answer = AA_READ;
	if (a == ACCEL_ASCEND && q == AQ_LIST)
		npu_list(out, outlen, ai);
	else if (a == ACCEL_ASCEND)
		npu_info(out, outlen, ai);
	else if (q == AQ_LIST)
		nv_list(out, outlen, ai);
	else
		nv_csv(q, out, outlen, ai);
	/*
	 * Nothing readable where something must be: npu-smi info always
	 * prints its chip table, and both tools list at least one device.
	 */
	if ((q != AQ_PROCS || a == ACCEL_ASCEND) && ai->ndev == 0)
		ai->answer = AA_UNREADABLE;
	if (a == ACCEL_ASCEND && q == AQ_PROCS && !ai->procs_read)
		ai->answer = AA_UNREADABLE;
	if (ai->answer == AA_UNREADABLE)
		first_words(ai->said, sizeof(ai->said), out, outlen);
}
