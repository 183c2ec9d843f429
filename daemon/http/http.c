/*
 * HTTP requests to vLLM on libcurl's multi interface, driven by the libuv
 * loop (curl's docs/examples/multi-uv.c): curl tells us which sockets to
 * watch and when to time out; we tell it what happened.
 */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "log.h"

#define BODY_CAP	(1024 * 1024)

struct req {
	struct req		*next;
	struct req		*prev;
	CURL			*easy;
	struct curl_slist	*hdrs;
	char			*body;
	struct sbuf		 resp;
	http_done_fn		*done;
	http_chunk_fn		*chunk;
	void			*arg;
	uint64_t		 start_ms;
	char			 errbuf[CURL_ERROR_SIZE];
};

struct sock {
	uv_poll_t	 poll;
	curl_socket_t	 fd;
};

/*
 * The client's one place of state: one curl multi handle per process,
 * on the daemon's one loop (http_init / http_shutdown).
 */
static struct {
	CURLM		*multi;
	struct req	*inflight;	/* answered at shutdown if unanswered */
	uv_loop_t	*loop;
	uv_timer_t	 timeout;
} hc;

static void
unlink_req(struct req *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		hc.inflight = r->next;
	if (r->next)
		r->next->prev = r->prev;
}

static void
free_req(struct req *r)
{
	curl_easy_cleanup(r->easy);
	curl_slist_free_all(r->hdrs);
	free(r->body);
	sbuf_free(&r->resp);
	free(r);
}

static void
check_done(void)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(hc.multi, &left))) {
		struct req *r;
		struct http_result res;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		memset(&res, 0, sizeof(res));
		if (m->data.result == CURLE_OK)
			curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE,
			    &res.status);
		else
			res.error = r->errbuf[0] ? r->errbuf :
			    curl_easy_strerror(m->data.result);
		res.timed_out = m->data.result == CURLE_OPERATION_TIMEDOUT;
		res.body = r->resp.s ? r->resp.s : "";
		res.bodylen = r->resp.len;
		res.elapsed_s = (double)(mono_ms() - r->start_ms) / 1000.0;
		curl_multi_remove_handle(hc.multi, r->easy);
		unlink_req(r);
		if (r->done)
			r->done(&res, r->arg);
		free_req(r);
	}
}

static void
on_poll(uv_poll_t *h, int status, int events)
{
	struct sock *s = h->data;
	int running, flags = 0;

	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(hc.multi, s->fd, flags, &running);
	check_done();
}

static void
on_timeout(uv_timer_t *t)
{
	int running;

	(void)t;
	curl_multi_socket_action(hc.multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done();
}

static int
start_timeout(CURLM *m, long ms, void *u)
{
	(void)m;
	(void)u;
	if (ms < 0)
		uv_timer_stop(&hc.timeout);
	else
		uv_timer_start(&hc.timeout, on_timeout, (uint64_t)ms, 0);
	return 0;
}

static void
free_sock(uv_handle_t *h)
{
	free(h->data);
}

static int
handle_socket(CURL *e, curl_socket_t fd, int action, void *u, void *sp)
{
	struct sock *s = sp;
	int ev = 0;

	(void)e;
	(void)u;
	if (action == CURL_POLL_REMOVE) {
		if (s) {
			uv_poll_stop(&s->poll);
			uv_close((uv_handle_t *)&s->poll, free_sock);
			curl_multi_assign(hc.multi, fd, NULL);
		}
		return 0;
	}
	if (s == NULL) {
		s = xcalloc(1, sizeof(*s));
		s->fd = fd;
		uv_poll_init_socket(hc.loop, &s->poll, fd);
		s->poll.data = s;
		curl_multi_assign(hc.multi, fd, s);
	}
	if (action != CURL_POLL_OUT)
		ev |= UV_READABLE;
	if (action != CURL_POLL_IN)
		ev |= UV_WRITABLE;
	uv_poll_start(&s->poll, ev, on_poll);
	return 0;
}

static size_t
on_data(char *p, size_t sz, size_t n, void *u)
{
	struct req *r = u;

	if (r->chunk) {
		r->chunk(p, sz * n, r->arg);
		return sz * n;
	}
	if (r->resp.len + sz * n > BODY_CAP)
		return 0;	/* a response this large is not vLLM's */
	sbuf_addn(&r->resp, p, sz * n);
	return sz * n;
}

int
http_init(uv_loop_t *l)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return -1;
	hc.loop = l;
	hc.multi = curl_multi_init();
	if (hc.multi == NULL)
		return -1;
	uv_timer_init(hc.loop, &hc.timeout);
	curl_multi_setopt(hc.multi, CURLMOPT_SOCKETFUNCTION, handle_socket);
	curl_multi_setopt(hc.multi, CURLMOPT_TIMERFUNCTION, start_timeout);
	return 0;
}

void
http_shutdown(void)
{
	struct req *r;

	if (hc.multi == NULL)
		return;
	/*
	 * Unanswered requests end here, answered as failed, as the SSH
	 * sessions answer theirs: each caller frees what it gave as arg.
	 */
	while ((r = hc.inflight)) {
		struct http_result res = { .error = HTTP_SHUTDOWN };

		curl_multi_remove_handle(hc.multi, r->easy);
		unlink_req(r);
		r->done(&res, r->arg);
		free_req(r);
	}
	curl_multi_cleanup(hc.multi);
	hc.multi = NULL;
	uv_close((uv_handle_t *)&hc.timeout, NULL);
	curl_global_cleanup();
}

void
http_request(const char *url, const char *body, double timeout_s,
    http_done_fn *done, void *arg)
{
	http_request_stream(url, body, NULL, timeout_s, NULL, done, arg);
}

void
http_request_key(const char *url, const char *body, const char *key,
    double timeout_s, http_done_fn *done, void *arg)
{
	http_request_stream(url, body, key, timeout_s, NULL, done, arg);
}

void
http_request_stream(const char *url, const char *body, const char *key,
    double timeout_s, http_chunk_fn *chunk, http_done_fn *done, void *arg)
{
	struct req *r = xcalloc(1, sizeof(*r));

	r->chunk = chunk;

	r->easy = curl_easy_init();
	r->done = done;
	r->arg = arg;
	r->start_ms = mono_ms();
	sbuf_init(&r->resp);
	curl_easy_setopt(r->easy, CURLOPT_URL, url);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
	curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(timeout_s * 1000));
	curl_easy_setopt(r->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	if (body) {
		r->body = xstrdup(body);
		r->hdrs = curl_slist_append(r->hdrs,
		    "Content-Type: application/json");
		curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body);
	}
	if (key && *key) {
		char *h = xprintf("Authorization: Bearer %s", key);

		r->hdrs = curl_slist_append(r->hdrs, h);
		free(h);
	}
	if (r->hdrs)
		curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->hdrs);
	r->next = hc.inflight;
	if (hc.inflight)
		hc.inflight->prev = r;
	hc.inflight = r;
	curl_multi_add_handle(hc.multi, r->easy);
}
