/*
 * HTTP client requests on libcurl multi, driven by the libuv loop
 * (http.c): the vLLM probes and tandemctl bench.
 */
#ifndef TANDEM_HTTP_H
#define TANDEM_HTTP_H

#include <stddef.h>
#include <uv.h>

struct http_result {
	long		 status;	/* 0 when no response */
	const char	*body;
	size_t		 bodylen;
	const char	*error;		/* curl's message when status is 0 */
	int		 timed_out;	/* no answer within the timeout */
	double		 elapsed_s;
};

typedef void	http_done_fn(const struct http_result *, void *arg);
typedef void	http_chunk_fn(const char *data, size_t len, void *arg);

int	http_init(uv_loop_t *);
/* Every request still unanswered is answered with error HTTP_SHUTDOWN. */
#define HTTP_SHUTDOWN	"shutting down"
void	http_shutdown(void);
/* body NULL: GET; else POST with Content-Type: application/json. */
void	http_request(const char *url, const char *body, double timeout_s,
	    http_done_fn *, void *arg);
/*
 * As http_request, with "Authorization: Bearer KEY" when key is set
 * (vLLM's --api-key; the header is never logged).
 */
void	http_request_key(const char *url, const char *body, const char *key,
	    double timeout_s, http_done_fn *, void *arg);
/* As http_request_key, but the body goes to chunk as it arrives (SSE). */
void	http_request_stream(const char *url, const char *body, const char *key,
	    double timeout_s, http_chunk_fn *chunk, http_done_fn *, void *arg);

#endif
