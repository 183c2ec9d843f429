/*
 * The verdicts on what nvidia-smi or npu-smi answered (accel.h): device
 * memory held by our processes or others, free enough for
 * gpu-memory-utilization, every device healthy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "utf8.h"

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
device_text(const struct accel_info *ai, const struct accel_proc *p,
    char *buf, size_t len)
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
		device_text(ai, p, at, sizeof(at));
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
