/*
 * tandemctl's client of tandemd's API (docs/api.md, "How tandemctl reaches
 * the daemon"): where it is (the config's api_socket, or --api), one
 * request to it, and what is said when it cannot be reached. bench.c,
 * bundle.c and tandemctl.c's commands all go through here.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conffile.h"
#include "config.h"
#include "ctl.h"
#include "preflight.h"

/*
 * The API: over the Unix socket api_sock (the config's api_socket), which
 * only root and group tandem can open and no other user can hold, unless
 * --api names a TCP address (docs/api.md, "How tandemctl reaches the
 * daemon"). The token goes wherever the request goes: to the socket, or
 * to the address the operator named; never to a port tandemctl chose.
 */
static const char	*api_url;
static char		*api_sock;
static const char	*api_why;	/* how api_url was chosen, for errors */
static int		 cfg_denied;	/* the default config: EACCES */
static int		 api_quiet;	/* wait: "not running" said once */
static const char	*file;		/* the config (--config, TANDEM_CONFIG) */
static int		 file_named;	/* not the default path */
/* a change's check, from the config read for the socket; 0: not read */
static double		 verdict_s;

static size_t
collect(char *p, size_t sz, size_t n, void *u)
{
	sbuf_addn(u, p, sz * n);
	return sz * n;
}

void
ctl_api_route(CURL *c)
{
	if (api_sock != NULL)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, api_sock);
}

/*
 * Why the socket did not answer. A user who may not read the config nor
 * open the socket is told so, not that tandemd is down (issue 42, item
 * 2): a check script would raise a false alarm.
 */
static void
unreachable(CURL *c, CURLcode rc, const char *errbuf)
{
	long oserr = 0;

	curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &oserr);
	if (rc == CURLE_COULDNT_CONNECT && (oserr == EACCES || cfg_denied))
		fprintf(stderr, "tandemctl: %s %s: permission denied (run as "
		    "root or join group tandem)\n", cfg_denied ?
		    "cannot read" : "cannot open tandemd's socket", cfg_denied ?
		    file : api_sock);
	else if (rc == CURLE_COULDNT_CONNECT)
		fprintf(stderr, "tandemctl: tandemd is not running: nothing "
		    "answers at %s (%s)%s\n", api_sock, oserr ?
		    strerror((int)oserr) : "connection refused",
		    api_why ? api_why : "");
	else
		fprintf(stderr, "tandemctl: tandemd at %s: %s\n", api_sock,
		    errbuf[0] ? errbuf : curl_easy_strerror(rc));
}

/*
 * One request to the daemon's API. Returns the HTTP status, or -1 with a
 * message naming the API address when the daemon cannot be reached.
 */
long
ctl_api(const char *method, const char *path, const char *token,
    struct sbuf *out)
{
	return ctl_api_body(method, path, token, NULL, out);
}

/* As ctl_api, with a body to POST (tandemctl apply's file). */
long
ctl_api_body(const char *method, const char *path, const char *token,
    const struct sbuf *body, struct sbuf *out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char *url = xprintf("%s%s", api_url, path), *auth = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	long code = -1;
	CURLcode rc;

	curl_easy_setopt(c, CURLOPT_URL, url);
	ctl_api_route(c);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body->s : "");
		if (body)
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
			    (curl_off_t)body->len);
	}
	if (token) {
		auth = xprintf("Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	}
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	else if (!api_quiet && api_sock != NULL)
		unreachable(c, rc, errbuf);
	else if (!api_quiet)
		fprintf(stderr, "tandemctl: tandemd is not running at %s (%s)%s"
		    "\n", api_url, rc == CURLE_COULDNT_CONNECT ?
		    "connection refused" : errbuf[0] ? errbuf :
		    curl_easy_strerror(rc), api_why ? api_why : "");
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(url);
	free(auth);
	return code;
}

/*
 * The API's socket, from the config's api_socket. A config that was named
 * (--config, $TANDEM_CONFIG) or that exists must load: a typo in it is
 * said, never papered over with the default. Only when the default config
 * is absent, or this user may not read the config (not root, not in group
 * tandem), does the default socket stand in, and a failure says so.
 */
static int
api_from_config(void)
{
	char err[ERRLEN];
	struct config *cf;

	api_url = "http://localhost";
	if (access(file, R_OK) == -1 && ((errno == ENOENT && !file_named) ||
	    errno == EACCES)) {
		cfg_denied = errno == EACCES;
		api_sock = xstrdup(CTL_DEFAULT_SOCKET);
		api_why = cfg_denied ? NULL : "; no " CTL_DEFAULT_CONFIG ": the "
		    "default socket (--api URL or --config FILE names another)";
		return 0;
	}
	if ((cf = conffile_load(file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tandemctl: %s\n", err);
		return -1;
	}
	api_sock = xstrdup(cf->api_socket);
	verdict_s = preflight_verdict_timeout_s(cf, 0);
	config_free(cf);
	return 0;
}

int
ctl_api_open(const char *config, int named, const char *url)
{
	file = config;
	file_named = named;
	if (url != NULL) {
		api_url = url;
		return 0;
	}
	return api_from_config();
}

const char *
ctl_api_url(void)
{
	return api_url;
}

void
ctl_api_quiet(void)
{
	api_quiet = 1;
}

double
ctl_api_verdict_s(double floor_s)
{
	return verdict_s > floor_s ? verdict_s : floor_s;
}
