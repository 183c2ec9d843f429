/*
 * The HTTP API's routes (docs/api.md): one table, its lookup and the 404
 * and 405 answers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpd_int.h"

/* The API (docs/api.md): GET (and HEAD) reads, POST changes. */
static const struct route routes[] = {
	{ "/",			0, httpd_get_page },
	{ "/status",		0, httpd_get_status },
	{ "/healthz",		0, httpd_get_healthz },
	{ "/metrics",		0, httpd_get_metrics },
	{ "/events",		0, httpd_get_events },
	{ "/rebuilds/last",	0, httpd_get_trace },
	{ "/bundle",		0, httpd_get_bundle },
	{ "/rebuild",		1, httpd_post_rebuild },
	{ "/pause",		1, httpd_post_pause },
	{ "/resume",		1, httpd_post_resume },
	{ "/apply",		1, httpd_post_apply },
	{ "/rollback",		1, httpd_post_rollback },
};

const struct route *
httpd_route_find(const char *path)
{
	size_t i;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(routes[i].path, path) == 0)
			return &routes[i];
	return NULL;
}

enum MHD_Result
httpd_route_not_found(struct MHD_Connection *c)
{
	struct sbuf b;
	enum MHD_Result r;
	size_t i;

	sbuf_init(&b);
	sbuf_add(&b, "no such endpoint:");
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (!routes[i].post)
			sbuf_addf(&b, " %s", routes[i].path);
	sbuf_add(&b, ", POST");
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (routes[i].post)
			sbuf_addf(&b, " %s", routes[i].path);
	r = httpd_reply_json(c, 404, b.s);
	sbuf_free(&b);
	return r;
}

enum MHD_Result
httpd_route_not_allowed(struct MHD_Connection *c, const struct route *rt)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *body = xstrdup("{\"error\":\"method not allowed\"}\n");

	if ((r = httpd_reply_new(body, strlen(body))) == NULL)
		return MHD_NO;
	MHD_add_response_header(r, "Allow", rt->post ? "POST" : "GET, HEAD");
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, 405, r);
	MHD_destroy_response(r);
	return ret;
}
