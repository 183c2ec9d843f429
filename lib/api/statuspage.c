/*
 * The status page's first paint. The markup of each part is the one
 * daemon/api/page/status.js builds from /status, so the script takes over
 * without the page changing shape. Every text from the document is
 * escaped: node errors and diagnoses quote remote output.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "statuspage.h"

void
html_escape(struct sbuf *b, const char *s)
{
	for (; s && *s; s++)
		switch (*s) {
		case '&':	sbuf_add(b, "&amp;");	break;
		case '<':	sbuf_add(b, "&lt;");	break;
		case '>':	sbuf_add(b, "&gt;");	break;
		case '"':	sbuf_add(b, "&quot;");	break;
		case '\'':	sbuf_add(b, "&#39;");	break;
		default:	sbuf_addc(b, *s);	break;
		}
}

static const char *
str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/*
 * A state or action as a CSS class. They are lower-case words from a fixed
 * set; anything else gets the neutral class rather than reaching markup.
 */
static void
class_word(struct sbuf *b, const char *prefix, const char *w)
{
	const char *p;

	if (w == NULL || *w == '\0' || strlen(w) > 24)
		w = "unknown";
	for (p = w; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || *p == '-')) {
			w = "unknown";
			break;
		}
	sbuf_addf(b, "%s%s", prefix, w);
}

static void
text_or_dash(struct sbuf *b, const char *s)
{
	if (s == NULL || *s == '\0')
		sbuf_add(b, "—");
	else
		html_escape(b, s);
}

static void
number(struct sbuf *b, const json_t *j)
{
	if (json_is_integer(j))
		sbuf_addf(b, "%lld", (long long)json_integer_value(j));
	else if (json_is_real(j))
		sbuf_addf(b, "%g", json_real_value(j));
	else
		sbuf_add(b, "—");
}

/* "2026-12-02T10:23:19Z" shown as "2026-12-02 10:23:19 UTC". */
static void
time_elem(struct sbuf *b, const char *iso)
{
	char shown[40];

	if (iso == NULL) {
		sbuf_add(b, "—");
		return;
	}
	snprintf(shown, sizeof(shown), "%s", iso);
	if (strlen(shown) == 20 && shown[10] == 'T' && shown[19] == 'Z') {
		shown[10] = ' ';
		snprintf(shown + 19, sizeof(shown) - 19, " UTC");
	}
	sbuf_add(b, "<time datetime=\"");
	html_escape(b, iso);
	sbuf_add(b, "\">");
	html_escape(b, shown);
	sbuf_add(b, "</time>");
}

static void
fact_open(struct sbuf *b, const char *id, const char *label)
{
	sbuf_addf(b, "<div><dt>%s</dt><dd id=\"%s\">", label, id);
}

static void
fact_number(struct sbuf *b, const char *id, const char *label,
    const json_t *j)
{
	fact_open(b, id, label);
	number(b, j);
	sbuf_add(b, "</dd></div>");
}

static void
fact_text(struct sbuf *b, const char *id, const char *label, const char *s)
{
	fact_open(b, id, label);
	text_or_dash(b, s);
	sbuf_add(b, "</dd></div>");
}

/* The rest of an element, from its class on, coloured by the word it shows. */
static void
class_and_word(struct sbuf *b, const char *prefix, const char *w,
    const char *close)
{
	class_word(b, prefix, w);
	sbuf_add(b, "\">");
	text_or_dash(b, w);
	sbuf_add(b, close);
}

/* A state, action or mode as a badge. */
static void
badge(struct sbuf *b, const char *id, const char *prefix, const char *w)
{
	sbuf_addf(b, "<span id=\"%s\" class=\"badge ", id);
	class_and_word(b, prefix, w, "</span>");
}

static void
summary(struct sbuf *b, const json_t *st)
{
	const json_t *rec = json_object_get(st, "recovery");
	const char *action = str(st, "action");
	double next = json_number_value(json_object_get(rec, "next_attempt_s"));
	const json_t *attempt = json_object_get(rec, "attempt");
	const json_t *cfg = json_object_get(st, "config");

	sbuf_add(b, "<div class=\"badges\">");
	badge(b, "state", "st-", str(st, "state"));
	badge(b, "action", "act-", action);
	badge(b, "mode", "mode-", str(st, "mode"));
	sbuf_add(b, "</div>\n<dl class=\"facts\">");
	fact_open(b, "since", "since");
	time_elem(b, str(st, "since"));
	sbuf_add(b, "</dd></div>");
	fact_number(b, "generation", "generation",
	    json_object_get(st, "generation"));
	fact_number(b, "rebuilds-hour", "rebuilds in the last hour",
	    json_object_get(rec, "rebuilds_last_hour"));
	if (json_integer_value(attempt) > 0)
		fact_number(b, "attempt", "failed attempts in a row", attempt);
	if (action && strcmp(action, "backoff") == 0) {
		fact_open(b, "next-attempt", "next attempt in");
		sbuf_addf(b, "%.0f s", next);
		sbuf_add(b, "</dd></div>");
	}
	if (json_is_true(json_object_get(rec, "halted"))) {
		fact_open(b, "halted", "retries");
		sbuf_add(b, "stopped: fix the cause, then Rebuild");
		sbuf_add(b, "</dd></div>");
	}
	/* stopped: what the recheck waits for (recovery.awaiting) */
	if (json_is_object(json_object_get(rec, "awaiting")))
		fact_text(b, "awaiting", "awaiting", str(json_object_get(rec,
		    "awaiting"), "message"));
	/* lib/policy/budget.c: after the cap or a halt, what to read first */
	if (json_is_object(json_object_get(st, "budget"))) {
		fact_text(b, "budget", "restart budget",
		    str(json_object_get(st, "budget"), "text"));
	}
	/* issue 46: the file's config, an applied one or the last good one */
	if (str(cfg, "running")) {
		fact_open(b, "config-running", "config running");
		html_escape(b, str(cfg, "running"));
		if (str(cfg, "message")) {
			sbuf_add(b, ": ");
			html_escape(b, str(cfg, "message"));
		}
		sbuf_add(b, "</dd></div>");
	}
	sbuf_add(b, "</dl>");
}

/* A text between two pieces of markup. */
static void
wrap(struct sbuf *b, const char *open, const char *s, const char *close)
{
	sbuf_add(b, open);
	html_escape(b, s);
	sbuf_add(b, close);
}

static void
diagnosis(struct sbuf *b, const json_t *d)
{
	if (!json_is_object(d))
		return;
	wrap(b, "<p><code class=\"code\">", str(d, "code"), "</code> ");
	wrap(b, "<span class=\"msg\">", str(d, "message"), "</span></p>");
	wrap(b, "<p class=\"remedy\"><b>Remedy:</b> ", str(d, "remedy"),
	    "</p>");
}

/* One row of markup for each element of an array (none for a non-array). */
static void
rows(struct sbuf *b, const json_t *a, void (*row)(struct sbuf *,
    const json_t *))
{
	size_t i;
	json_t *e;

	json_array_foreach(a, i, e)
		row(b, e);
}

static void
warning(struct sbuf *b, const json_t *e)
{
	wrap(b, "<li><code>", str(e, "code"), "</code> ");
	if (str(e, "node"))
		wrap(b, "<b>", str(e, "node"), "</b>: ");
	wrap(b, "", str(e, "message"), "</li>");
}

/* yes / no / — for a JSON boolean or null, with a class to colour it. */
static void
yes_no(struct sbuf *b, const json_t *j)
{
	if (json_is_true(j))
		sbuf_add(b, "<td class=\"ok\">yes</td>");
	else if (json_is_false(j))
		sbuf_add(b, "<td class=\"bad\">no</td>");
	else
		sbuf_add(b, "<td class=\"none\">—</td>");
}

static void
td_text(struct sbuf *b, const char *s)
{
	sbuf_add(b, "<td>");
	text_or_dash(b, s);
	sbuf_add(b, "</td>");
}

static void
node(struct sbuf *b, const json_t *n)
{
	sbuf_add(b, "<tr><th scope=\"row\">");
	text_or_dash(b, str(n, "name"));
	sbuf_add(b, "</th>");
	td_text(b, str(n, "role"));
	td_text(b, str(n, "ssh_host"));
	td_text(b, str(n, "ip"));
	yes_no(b, json_object_get(n, "reachable"));
	sbuf_add(b, "<td class=\"");
	class_and_word(b, "ctr-", str(n, "container"), "</td>");
	yes_no(b, json_object_get(n, "ray_alive"));
	sbuf_add(b, "<td>");
	number(b, json_object_get(n, "gpus"));
	sbuf_add(b, str(n, "last_error") ? "</td><td class=\"err\">" :
	    "</td><td class=\"none\">");
	text_or_dash(b, str(n, "last_error"));
	sbuf_add(b, "</td></tr>\n");
}

/* The nodes' devices column: GPUs, or NPUs on an Ascend cluster. */
static const char *
devices_word(const char *accelerator)
{
	if (accelerator && strcmp(accelerator, "ascend") == 0)
		return "NPUs";
	if (accelerator && strcmp(accelerator, "none") == 0)
		return "devices";
	return "GPUs";
}

static void
services(struct sbuf *b, const json_t *st)
{
	const json_t *ray = json_object_get(st, "ray");
	const json_t *v = json_object_get(st, "vllm");
	const json_t *alive = json_object_get(ray, "alive_nodes");

	sbuf_add(b, "<div class=\"svc\"><h3>Ray</h3><p id=\"ray\">");
	if (json_is_null(alive) || alive == NULL)
		sbuf_add(b, "no <code>ray status</code> seen (none yet, or "
		    "topology dp, which runs no Ray)");
	else {
		number(b, alive);
		sbuf_add(b, " of ");
		number(b, json_object_get(ray, "expect_nodes"));
		sbuf_add(b, " nodes alive · ");
		number(b, json_object_get(ray, "gpus"));
		sbuf_add(b, " of ");
		number(b, json_object_get(ray, "expect_gpus"));
		sbuf_add(b, " GPUs");
	}
	sbuf_add(b, "</p></div>\n<div class=\"svc\"><h3>vLLM</h3><dl "
	    "class=\"facts\" id=\"vllm\">");
	fact_open(b, "vllm-healthy", "healthy");
	sbuf_add(b, json_is_true(json_object_get(v, "healthy")) ?
	    "<span class=\"ok\">yes</span>" : "<span class=\"bad\">no</span>");
	sbuf_add(b, "</dd></div>");
	fact_text(b, "vllm-model", "model", str(v, "model"));
	fact_text(b, "vllm-url", "API", str(v, "url"));
	fact_number(b, "vllm-gmu", "--gpu-memory-utilization",
	    json_object_get(v, "gpu_memory_utilization"));
	sbuf_add(b, "</dl></div>");
}

/*
 * The data the script starts from, in a <script type="application/json">
 * block, which the browser never runs. Inside it only "</script" would end
 * the block, and "<!--" would change how the parser looks for that end;
 * jansson writes '<', '>' and '&' only inside strings, where \u escapes
 * mean the same to JSON.parse. The events are those of the longest
 * timeline, and the one before them, which says the state at its start.
 */
static void
data(struct sbuf *b, json_t *st, const json_t *events, double now)
{
	json_t *keep = json_array(), *d;
	size_t i, n = json_array_size(events), from = n;
	char *s, *p;

	for (i = 0; i < n; i++)
		if (json_number_value(json_object_get(json_array_get(events,
		    i), "time")) >= now - PAGE_HISTORY_S) {
			from = i;
			break;
		}
	if (from > 0)
		from--;
	for (i = from; i < n; i++)
		json_array_append(keep, json_array_get(events, i));
	d = json_pack("{s:O, s:o, s:f}", "status", st, "events", keep, "now",
	    now);
	s = d ? json_dumps(d, JSON_COMPACT) : NULL;
	json_decref(d);
	if (s == NULL) {
		sbuf_add(b, "null");
		return;
	}
	for (p = s; *p; p++)
		switch (*p) {
		case '<':	sbuf_add(b, "\\u003c");	break;
		case '>':	sbuf_add(b, "\\u003e");	break;
		case '&':	sbuf_add(b, "\\u0026");	break;
		default:	sbuf_addc(b, *p);	break;
		}
	free(s);
}

int
statuspage_render(struct sbuf *b, const struct page_tmpl *t,
    json_t *st, const json_t *events, const char *nonce, double now,
    char *err, size_t errlen)
{
	const char *p = t->html, *end = t->html + t->html_len, *m, *k;
	const json_t *diag = json_object_get(st, "diagnosis");
	const json_t *warn = json_object_get(st, "warnings");
	time_t tt = (time_t)now;
	struct tm tm;
	char ts[32];
	size_t klen;

	gmtime_r(&tt, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	while (p < end) {
		if ((m = memmem(p, (size_t)(end - p), "{{", 2)) == NULL ||
		    (k = memmem(m, (size_t)(end - m), "}}", 2)) == NULL) {
			sbuf_addn(b, p, (size_t)(end - p));
			break;
		}
		sbuf_addn(b, p, (size_t)(m - p));
		m += 2;
		klen = (size_t)(k - m);
		p = k + 2;
#define IS(w) (klen == sizeof(w) - 1 && memcmp(m, w, klen) == 0)
		if (IS("nonce"))
			sbuf_add(b, nonce);
		else if (IS("css"))
			sbuf_addn(b, t->css, t->css_len);
		else if (IS("js"))
			sbuf_addn(b, t->js, t->js_len);
		else if (IS("name"))
			text_or_dash(b, str(st, "name"));
		else if (IS("title")) {
			text_or_dash(b, str(st, "name"));
			sbuf_add(b, ": ");
			text_or_dash(b, str(st, "state"));
			sbuf_add(b, " · tandem");
		} else if (IS("now"))
			sbuf_add(b, ts);
		else if (IS("summary"))
			summary(b, st);
		else if (IS("diagnosis"))
			diagnosis(b, diag);
		else if (IS("diag_hidden"))
			sbuf_add(b, json_is_object(diag) ? "" : " hidden");
		else if (IS("warnings"))
			rows(b, warn, warning);
		else if (IS("warn_hidden"))
			sbuf_add(b, json_array_size(warn) ? "" : " hidden");
		else if (IS("nodes"))
			rows(b, json_object_get(st, "nodes"), node);
		else if (IS("devices"))
			sbuf_add(b, devices_word(str(st, "accelerator")));
		else if (IS("services"))
			services(b, st);
		else if (IS("data"))
			data(b, st, events, now);
		else {
			seterr(err, errlen, "status page: unknown marker "
			    "{{%.*s}}", (int)(klen > 40 ? 40 : klen), m);
			return -1;
		}
#undef IS
	}
	return 0;
}
