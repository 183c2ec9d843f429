/*
 * tandemctl bundle [-o FILE]: the newest evidence bundle (GET /bundle, a
 * tar that tandemd kept when retries stopped) into a file. Without -o
 * the file takes the bundle's own name, in the current directory; "-o -"
 * writes to stdout, which must not be a terminal. The file appears only
 * once it is whole (written beside it, then renamed), mode 0600.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bundle.h"
#include "ctl.h"

struct dl {
	struct sbuf	 body;
	char		 name[BUNDLE_NAME_MAX];	/* from Content-Disposition */
};

static size_t
on_body(char *p, size_t sz, size_t n, void *u)
{
	struct dl *d = u;

	/* the daemon's bundles are at most BUNDLE_MAX; refuse far more */
	if (d->body.len + sz * n > 4 * (size_t)BUNDLE_MAX)
		return 0;
	sbuf_addn(&d->body, p, sz * n);
	return sz * n;
}

/* Content-Disposition: attachment; filename="tandem-bundle-...tar" */
static size_t
on_header(char *p, size_t sz, size_t n, void *u)
{
	static const char key[] = "content-disposition:";
	struct dl *d = u;
	size_t len = sz * n;
	char line[256], *f, *e;

	if (len < sizeof(key) || len >= sizeof(line) ||
	    strncasecmp(p, key, sizeof(key) - 1) != 0)
		return len;
	memcpy(line, p, len);
	line[len] = '\0';
	if ((f = strstr(line, "filename=\"")) != NULL &&
	    (e = strchr(f + 10, '"')) != NULL) {
		*e = '\0';
		/* a name of ours only: never a path the answer chose */
		if (bundle_name_valid(f + 10))
			snprintf(d->name, sizeof(d->name), "%s", f + 10);
	}
	return len;
}

static int
save(const char *path, const struct sbuf *b)
{
	char *tmp = xprintf("%s.part", path);
	FILE *fp = NULL;
	int fd, ok;

	/*
	 * 0600 as tandemd keeps its own copy: a bundle holds the config and
	 * the nodes' logs. O_EXCL|O_NOFOLLOW: never through a file or link
	 * someone placed under the name first.
	 */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1 || (fp = fdopen(fd, "w")) == NULL) {
		fprintf(stderr, "tandemctl: %s: %s\n", tmp, strerror(errno));
		if (fd != -1) {
			close(fd);
			unlink(tmp);
		}
		free(tmp);
		return 1;
	}
	ok = fwrite(b->s, 1, b->len, fp) == b->len;
	ok = (fclose(fp) == 0) && ok;
	if (!ok || rename(tmp, path) == -1) {
		fprintf(stderr, "tandemctl: %s: %s\n", path, strerror(errno));
		unlink(tmp);
		free(tmp);
		return 1;
	}
	free(tmp);
	return 0;
}

int
ctl_bundle(const char *base_url, const char *token, const char *out)
{
	struct dl d;
	CURL *c;
	struct curl_slist *h = NULL;
	char *url, *auth, errbuf[CURL_ERROR_SIZE] = "";
	long code = -1;
	CURLcode rc;
	int ret = 1;

	if (out && strcmp(out, "-") == 0 && isatty(1)) {
		fprintf(stderr, "tandemctl: the bundle is a tar: not to a "
		    "terminal (-o FILE, or redirect stdout)\n");
		return 2;
	}
	memset(&d, 0, sizeof(d));
	sbuf_init(&d.body);
	c = curl_easy_init();
	url = xprintf("%s/bundle", base_url);
	auth = xprintf("Authorization: Bearer %s", token);
	h = curl_slist_append(h, auth);
	curl_easy_setopt(c, CURLOPT_URL, url);
	ctl_api_route(c);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &d);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &d);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (rc != CURLE_OK)
		fprintf(stderr, "tandemctl: tandemd is not running at %s (%s)\n",
		    base_url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
	else if (code != 200) {
		json_t *j = json_loads(d.body.s ? d.body.s : "", 0, NULL);
		const char *msg = json_string_value(json_object_get(j,
		    "error"));

		fprintf(stderr, "tandemctl: /bundle answered %ld: %s\n", code,
		    msg ? msg : "(no message)");
		json_decref(j);
	} else if (out && strcmp(out, "-") == 0) {
		ret = fwrite(d.body.s, 1, d.body.len, stdout) == d.body.len &&
		    fflush(stdout) == 0 ? 0 : 1;
	} else {
		const char *path = out ? out : d.name[0] ? d.name :
		    "tandem-bundle.tar";

		if ((ret = save(path, &d.body)) == 0)
			printf("%s: %zu bytes\n", path, d.body.len);
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(url);
	free(auth);
	sbuf_free(&d.body);
	return ret;
}
