/*
 * The answers, as Ray's dashboard gives them (python/ray/dashboard/
 * http_server_head.py, python/ray/_private/authentication/
 * http_token_authentication.py): GET /api/authentication_mode is public
 * and says {"authentication_mode": "token"} or "disabled"; any other path
 * without a token gets 401 "Unauthorized: Missing authentication token",
 * with a wrong one 403 "Forbidden: Invalid authentication token". Before
 * Ray 2.52 there is no such endpoint (404) and no authentication.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raysec.h"
#include "utf8.h"
#include "util.h"

/* "HTTP/1.x NNN" at the start of a span, or 0. */
static int
http_status(const char *p, const char *end)
{
	int i, st = 0;

	if (end - p < 12 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ')
		return 0;
	/* three digits, read within the answer: it need not end in a NUL */
	for (i = 9; i < 12; i++) {
		if (p[i] < '0' || p[i] > '9')
			return 0;
		st = st * 10 + (p[i] - '0');
	}
	return st >= 100 && st <= 599 ? st : 0;
}

static void
body_words(struct ray_probe *r, const char *p, const char *end)
{
	const char *b = span_str(p, end, "\r\n\r\n");
	size_t n;

	b = b ? b + 4 : p;
	while (end > b && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	n = (size_t)(end - b);
	if (n > 120)
		n = 120;
	if (r->words[0] == '\0')
		utf8_copyn(r->words, sizeof(r->words), b, n);
}

void
ray_probe_parse(const char *text, size_t len, struct ray_probe *r)
{
	const char *p = text, *end = text + len, *nl, *e;
	const char *get = NULL;
	int which = 0;	/* 1: authentication_mode, 2: version */
	int ports = 0;

	memset(r, 0, sizeof(*r));
	r->gcs_open = r->dash_open = -1;
	if (text == NULL)
		return;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		e = nl ? nl : end;
		if (e - p >= 5 && strncmp(p, "port ", 5) == 0) {
			int open = span_str(p, e, " open") != NULL;

			/* the command names the GCS port first */
			if (ports++ == 0)
				r->gcs_open = open;
			else
				r->dash_open = open;
		} else if (e - p >= 4 && strncmp(p, "get ", 4) == 0) {
			which = span_str(p, e, "authentication_mode") ? 1 : 2;
			get = nl ? nl + 1 : end;
		} else if (e - p >= 4 && strncmp(p, "end ", 4) == 0 && get) {
			int st = http_status(get, p);

			if (which == 1) {
				r->mode_status = st;
				if (st == 200 && span_str(get, p, "\"token\""))
					r->auth = RAY_AUTH_TOKEN;
				else if (st == 200 && span_str(get, p,
				    "\"disabled\""))
					r->auth = RAY_AUTH_DISABLED;
				else if (st == 404)
					r->auth = RAY_AUTH_ABSENT;
			} else {
				r->version_status = st;
				if ((st == 401 || st == 403) &&
				    r->auth != RAY_AUTH_DISABLED)
					r->auth = RAY_AUTH_TOKEN;
				else if (st == 200 && r->auth ==
				    RAY_AUTH_UNKNOWN)
					r->auth = RAY_AUTH_DISABLED;
			}
			if (st)
				body_words(r, get, p);
			get = NULL;
		}
		p = nl ? nl + 1 : end;
	}
}

static enum ray_auth
combined(const struct ray_probe *w, const struct ray_probe *h)
{
	/* the worker's view first: it is what the network sees */
	if (w->auth != RAY_AUTH_UNKNOWN)
		return w->auth;
	return h ? h->auth : RAY_AUTH_UNKNOWN;
}

enum ray_exposure
ray_exposure_judge(const struct ray_probe *w, const struct ray_probe *h,
    const char *head_ip, int gcs_port, int config_token, char *msg,
    size_t len)
{
	enum ray_auth auth = combined(w, h);
	char ports[96];

	if (len)
		msg[0] = '\0';
	if (w->gcs_open != 1 && w->dash_open != 1)
		return RAYX_CLOSED;
	if (w->gcs_open == 1 && w->dash_open == 1)
		snprintf(ports, sizeof(ports), "GCS port %d and dashboard/job "
		    "API port 8265 answer", gcs_port);
	else if (w->gcs_open == 1)
		snprintf(ports, sizeof(ports), "GCS port %d answers", gcs_port);
	else
		snprintf(ports, sizeof(ports), "dashboard/job API port 8265 "
		    "answers");
	switch (auth) {
	case RAY_AUTH_TOKEN:
		return RAYX_AUTH;
	case RAY_AUTH_DISABLED:
		snprintf(msg, len, "the head's Ray %s on %s from the fast link "
		    "and Ray's token authentication is off: anyone on that "
		    "network can run code on every node (CVE-2023-48022); set "
		    "ray.auth_token_file", ports, head_ip);
		return RAYX_OPEN;
	case RAY_AUTH_ABSENT:
		snprintf(msg, len, "the head's Ray %s on %s from the fast link "
		    "and this Ray has no token authentication (it came in Ray "
		    "2.52): anyone on that network can run code on every node "
		    "(CVE-2023-48022); use an image with Ray 2.52 or later and "
		    "set ray.auth_token_file, or keep the fast link private",
		    ports, head_ip);
		return RAYX_OPEN;
	case RAY_AUTH_UNKNOWN:
		break;
	}
	if (config_token)
		return RAYX_AUTH;
	snprintf(msg, len, "the head's Ray %s on %s from the fast link; Ray's "
	    "dashboard did not say whether token authentication is on%s%s%s, "
	    "and tandem did not turn it on: set ray.auth_token_file", ports,
	    head_ip, w->words[0] || (h && h->words[0]) ? " (it said: " : "",
	    w->words[0] ? w->words : h && h->words[0] ? h->words : "",
	    w->words[0] || (h && h->words[0]) ? ")" : "");
	return RAYX_OPEN;
}
