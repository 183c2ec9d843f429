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

const char *
accel_name(enum accel a)
{
	switch (a) {
	case ACCEL_NVIDIA:	return "nvidia";
	case ACCEL_ASCEND:	return "ascend";
	case ACCEL_NONE:	return "none";
	}
	return "?";
}

const char *
accel_word(enum accel a, int plural)
{
	switch (a) {
	case ACCEL_NVIDIA:	return plural ? "GPUs" : "GPU";
	case ACCEL_ASCEND:	return plural ? "NPUs" : "NPU";
	case ACCEL_NONE:	break;
	}
	return plural ? "devices" : "device";
}

const char *
accel_ray_key(enum accel a)
{
	return a == ACCEL_ASCEND ? "NPU" : "GPU";
}

const char *
accel_tool(enum accel a)
{
	switch (a) {
	case ACCEL_NVIDIA:	return "nvidia-smi";
	case ACCEL_ASCEND:	return "npu-smi";
	case ACCEL_NONE:	break;
	}
	return NULL;
}

const char *
accel_verdict_name(enum accel_verdict v)
{
	switch (v) {
	case AV_PASS:		return "pass";
	case AV_FAIL:		return "fail";
	case AV_NOT_CHECKED:	return "not checked";
	case AV_UNKNOWN:	return "could not tell";
	}
	return "?";
}

enum accel_query
accel_devices_query(enum accel a)
{
	return a == ACCEL_ASCEND ? AQ_MEMORY : AQ_LIST;
}

/* The device path an extra_args element passes, or NULL. */
static const char *
device_arg(const struct strv *v, size_t i)
{
	const char *a = v->v[i];

	if (strncmp(a, "--device=", 9) == 0)
		return a + 9;
	if (i > 0 && strcmp(v->v[i - 1], "--device") == 0)
		return a;
	return NULL;
}

enum accel
accel_default(const struct strv *extra)
{
	size_t i;
	const char *d;

	for (i = 0; i < extra->n; i++)
		if ((d = device_arg(extra, i)) != NULL &&
		    strncmp(d, "/dev/davinci", 12) == 0)
			return ACCEL_ASCEND;
	return ACCEL_NVIDIA;
}

size_t
accel_davinci(const struct strv *extra, int *ids, size_t max)
{
	size_t i, n = 0;
	const char *d, *p;

	for (i = 0; i < extra->n; i++) {
		if ((d = device_arg(extra, i)) == NULL ||
		    strncmp(d, "/dev/davinci", 12) != 0)
			continue;
		/* /dev/davinciN[:...]: the host's device N (not _manager) */
		for (p = d + 12; isdigit((unsigned char)*p); p++)
			;
		if (p == d + 12 || (*p != '\0' && *p != ':') || p - d > 16)
			continue;
		if (n < max)
			ids[n] = atoi(d + 12);
		n++;
	}
	return n;
}

/* Derived environment ------------------------------------------------------ */

#define IP	"the node's ip"
#define IFN	"the node's ifname"

static const struct accel_env env_nvidia[] = {
	{ "VLLM_HOST_IP", "{ip}", IP },
	{ "GLOO_SOCKET_IFNAME", "{ifname}", IFN },
	{ "NCCL_SOCKET_IFNAME", "{ifname}", IFN },
	{ NULL, NULL, NULL },
};

/*
 * The Ascend data-parallel guide sets, per node, HCCL_IF_IP (the node's
 * own address), GLOO_SOCKET_IFNAME, TP_SOCKET_IFNAME and
 * HCCL_SOCKET_IFNAME (the interface on the nodes' common network).
 * ASCEND_RT_VISIBLE_DEVICES takes the logical device IDs the process may
 * use (CANN's environment variable reference: "if the number of available
 * devices is 8, the device IDs are 0, 1, ... 7"); in a container given n
 * /dev/davinci devices those are 0 .. n-1.
 */
static const struct accel_env env_ascend[] = {
	{ "VLLM_HOST_IP", "{ip}", IP },
	{ "GLOO_SOCKET_IFNAME", "{ifname}", IFN },
	{ "HCCL_IF_IP", "{ip}", IP },
	{ "HCCL_SOCKET_IFNAME", "{ifname}", IFN },
	{ "TP_SOCKET_IFNAME", "{ifname}", IFN },
	{ "ASCEND_RT_VISIBLE_DEVICES", NULL,
	  "the /dev/davinci devices in container.extra_args" },
	{ NULL, NULL, NULL },
};

const struct accel_env *
accel_env_table(enum accel a)
{
	return a == ACCEL_ASCEND ? env_ascend : env_nvidia;
}

char *
accel_env_value(const struct config *cf, const struct node_conf *n,
    const struct accel_env *e)
{
	int ids[ACCEL_DEVS_MAX];
	size_t i, k;
	struct sbuf b;

	if (e->tmpl)
		return config_expand(e->tmpl, n);
	k = accel_davinci(&cf->container.extra_args, ids, ACCEL_DEVS_MAX);
	if (k == 0)
		return NULL;
	if (k > ACCEL_DEVS_MAX)
		k = ACCEL_DEVS_MAX;
	sbuf_init(&b);
	for (i = 0; i < k; i++)
		sbuf_addf(&b, "%s%zu", i ? "," : "", i);
	return sbuf_take(&b);
}

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

/* Verdicts ---------------------------------------------------------------- */

/* The verdict of an answer that was not read, with msg saying why. */
static enum accel_verdict
unread(const struct accel_info *ai, const char *what, char *msg, size_t len)
{
	const char *tool = accel_tool(ai->accel);

	switch (ai->answer) {
	case AA_READ:
		break;
	case AA_NOT_ASKED:
		utf8_fmt(msg, len, "%s not checked (container.accelerator is "
		    "none)", what);
		return AV_NOT_CHECKED;
	case AA_NO_TOOL:
		utf8_fmt(msg, len, "%s not checked: %s is not on the node "
		    "(exit 127%s%s)", what, tool, ai->said[0] ? ": " : "",
		    ai->said);
		return AV_NOT_CHECKED;
	case AA_UNREADABLE:
		utf8_fmt(msg, len, "%s: could not tell: %s answered \"%s\"",
		    what, tool, ai->said);
		return AV_UNKNOWN;
	}
	return AV_PASS;
}

static void
where(const struct accel_info *ai, const struct accel_proc *p, char *buf,
    size_t len)
{
	if (p->dev < 0)
		buf[0] = '\0';
	else if (ai->accel == ACCEL_ASCEND)
		snprintf(buf, len, " on NPU %d chip %d", p->dev, p->chip);
	else
		snprintf(buf, len, " on GPU %d", p->dev);
}

enum accel_verdict
accel_held(const struct accel_info *ai, int (*foreign)(long, void *),
    void *arg, char *msg, size_t len)
{
	const char *mem = ai->accel == ACCEL_ASCEND ? "NPU memory" :
	    "GPU memory";
	enum accel_verdict v;
	size_t i;

	if ((v = unread(ai, mem, msg, len)) != AV_PASS)
		return v;
	for (i = 0; i < ai->nproc; i++) {
		const struct accel_proc *p = &ai->proc[i];
		char at[48], amount[48];

		if (foreign && foreign(p->pid, arg))
			continue;
		where(ai, p, at, sizeof(at));
		if (p->mib >= 0)
			snprintf(amount, sizeof(amount), "%lld MiB", p->mib);
		else
			snprintf(amount, sizeof(amount), "%s", "memory (amount "
			    "not reported)");
		utf8_fmt(msg, len, "pid %ld (%s) holds %s%s%s", p->pid,
		    p->name[0] ? p->name : "name not shown", amount, at,
		    ai->more_procs ? " (and more processes)" : "");
		return AV_FAIL;
	}
	if (ai->more_procs) {
		utf8_fmt(msg, len, "%s: more than %d processes listed: could "
		    "not tell", mem, ACCEL_PROCS_MAX);
		return AV_UNKNOWN;
	}
	utf8_fmt(msg, len, "%s released (read from %s)", mem,
	    accel_tool(ai->accel));
	return AV_PASS;
}

enum accel_verdict
accel_free(const struct accel_info *ai, double gmu, char *msg, size_t len)
{
	const char *w = accel_word(ai->accel, 0);
	enum accel_verdict v;
	size_t i, low = 0;
	int checked = 0;

	if ((v = unread(ai, "free memory", msg, len)) != AV_PASS)
		return v;
	if (gmu <= 0 || gmu > 1)
		gmu = 0.9;	/* vLLM's default --gpu-memory-utilization */
	for (i = 0; i < ai->ndev; i++) {
		const struct accel_dev *d = &ai->dev[i];
		double want, freemib;

		if (d->total_mib <= 0 || d->used_mib < 0)
			continue;
		/* the fullest device, for the message of a pass */
		if (checked++ == 0 || (double)(d->total_mib - d->used_mib) /
		    (double)d->total_mib < (double)(ai->dev[low].total_mib -
		    ai->dev[low].used_mib) / (double)ai->dev[low].total_mib)
			low = i;
		want = gmu * (double)d->total_mib;
		freemib = (double)(d->total_mib - d->used_mib);
		if (freemib + 0.5 < want) {
			char id[32];

			if (ai->accel == ACCEL_ASCEND)
				snprintf(id, sizeof(id), "NPU %d chip %d",
				    d->id, d->chip);
			else
				snprintf(id, sizeof(id), "GPU %d", d->id);
			struct sbuf b;
			size_t j;

			/* npu-smi says whose the memory is: name them */
			sbuf_init(&b);
			for (j = 0; j < ai->nproc; j++)
				if (ai->proc[j].dev == d->id &&
				    ai->proc[j].chip == d->chip)
					sbuf_addf(&b, "%s pid %ld (%s) %lld MiB",
					    b.len ? "," : "; held by",
					    ai->proc[j].pid, ai->proc[j].name[0] ?
					    ai->proc[j].name : "name not shown",
					    ai->proc[j].mib);
			utf8_fmt(msg, len, "%s has %.1f of %.1f GiB free, less "
			    "than --gpu-memory-utilization %g asks (%.1f GiB)%s",
			    id, freemib / 1024, (double)d->total_mib / 1024,
			    gmu, want / 1024, b.len ? b.s : "");
			sbuf_free(&b);
			return AV_FAIL;
		}
	}
	if (checked == 0) {
		utf8_fmt(msg, len, "free memory not checked: %s reports no "
		    "memory total (unified memory)", accel_tool(ai->accel));
		return AV_NOT_CHECKED;
	}
	utf8_fmt(msg, len, "%d %s%s: %.1f of %.1f GiB free on the fullest, "
	    "--gpu-memory-utilization %g asks %.1f GiB", checked, checked == 1 ?
	    w : accel_word(ai->accel, 1), (size_t)checked < ai->ndev ?
	    " (others report no total)" : "",
	    (double)(ai->dev[low].total_mib - ai->dev[low].used_mib) / 1024,
	    (double)ai->dev[low].total_mib / 1024, gmu,
	    gmu * (double)ai->dev[low].total_mib / 1024);
	return AV_PASS;
}

/*
 * npu-smi's health words (Huawei's npu-smi reference, "查询所有芯片健康状
 * 态"): OK; Warning, a minor alarm (一般告警), and Alarm, a major one (重要
 * 告警), with which the NPU still runs work (tests/unit/data/npu-smi's
 * info-910-warning shows processes on NPUs in Warning); Critical (紧急告
 * 警); UNKNOWN, the device absent or not started. Only the last two take
 * the NPU out of service.
 */
static int
health_fails(const char *h)
{
	return strcmp(h, "Critical") == 0 || strcmp(h, "UNKNOWN") == 0;
}

static void
health_list(const struct accel_info *ai, int failing, struct sbuf *b)
{
	size_t i;

	for (i = 0; i < ai->ndev; i++)
		if (ai->dev[i].health[0] && strcmp(ai->dev[i].health, "OK") !=
		    0 && health_fails(ai->dev[i].health) == failing)
			sbuf_addf(b, "%s%s %d chip %d %s", b->len ? ", " : "",
			    accel_word(ai->accel, 0), ai->dev[i].id,
			    ai->dev[i].chip, ai->dev[i].health);
}

enum accel_verdict
accel_devices(const struct accel_info *ai, char *msg, size_t len)
{
	enum accel_verdict v;
	const char *name = "";
	size_t i;
	int bad = 0, warned = 0;
	char unit[64];
	struct sbuf b, w;

	if ((v = unread(ai, accel_word(ai->accel, 1), msg, len)) != AV_PASS)
		return v;
	for (i = 0; i < ai->ndev; i++) {
		if (ai->dev[i].name[0])
			name = ai->dev[i].name;
		if (ai->dev[i].health[0] == '\0' ||
		    strcmp(ai->dev[i].health, "OK") == 0)
			continue;
		if (health_fails(ai->dev[i].health))
			bad++;
		else
			warned++;
	}
	if (ai->accel == ACCEL_ASCEND && (size_t)ai->nnpus != ai->ndev)
		snprintf(unit, sizeof(unit), "%d NPUs (%zu chips)", ai->nnpus,
		    ai->ndev);
	else
		snprintf(unit, sizeof(unit), "%zu %s", ai->ndev,
		    accel_word(ai->accel, ai->ndev != 1));
	if (ai->ndev == 0) {
		utf8_fmt(msg, len, "no %s visible", accel_word(ai->accel, 1));
		return AV_FAIL;
	}
	sbuf_init(&b);
	sbuf_init(&w);
	health_list(ai, 1, &b);
	health_list(ai, 0, &w);
	if (bad)
		utf8_fmt(msg, len, "%s%s%s%s, not healthy: %s%s%s", unit,
		    name[0] ? " (" : "", name, name[0] ? ")" : "", b.s,
		    warned ? "; warnings: " : "", warned ? w.s : "");
	else if (warned)
		utf8_fmt(msg, len, "%s%s%s%s, in service with warnings: %s "
		    "(npu-smi's alarms; the NPUs still run work)", unit,
		    name[0] ? " (" : "", name, name[0] ? ")" : "", w.s);
	else
		utf8_fmt(msg, len, "%s%s%s%s%s", unit, name[0] ? " (" : "",
		    name, name[0] ? ")" : "", ai->dev[0].health[0] ?
		    ", all OK" : "");
	sbuf_free(&b);
	sbuf_free(&w);
	return bad ? AV_FAIL : AV_PASS;
}
