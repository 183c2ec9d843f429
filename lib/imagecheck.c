#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "imagecheck.h"
#include "utf8.h"
#include "util.h"

/* A bare 64-digit hex ID from "sha256:HEX", "HEX" or "blobs/sha256/HEX". */
static int
bare_id(const char *s, size_t n, char *id, size_t idlen)
{
	size_t i;

	if (n >= 7 && strncmp(s, "sha256:", 7) == 0) {
		s += 7;
		n -= 7;
	}
	if (n != 64 || idlen < IMAGE_ID_LEN)
		return -1;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' &&
		    s[i] <= 'f')))
			return -1;
	memcpy(id, s, n);
	id[n] = '\0';
	return 0;
}

int
image_inspect_parse(const char *out, char *id, size_t idlen, char *created,
    size_t createdlen)
{
	size_t n = strcspn(out, " \n");
	const char *d = out + n;

	if (bare_id(out, n, id, idlen) == -1)
		return -1;
	while (*d == ' ')
		d++;
	utf8_copyn(created, createdlen, d, strcspn(d, "\r\n"));
	return 0;
}

/*
 * docker writes "vllm/x:t", podman "docker.io/vllm/x:t" for the same, or
 * "localhost/vllm/x:t" for an image it did not pull.
 */
static const char *
short_ref(const char *s)
{
	if (strncmp(s, "localhost/", 10) == 0)
		return s + 10;
	if (strncmp(s, "docker.io/library/", 18) == 0)
		return s + 18;
	if (strncmp(s, "docker.io/", 10) == 0)
		return s + 10;
	return s;
}

static int
config_id(const char *cfg, char *id, size_t idlen)
{
	const char *base = strrchr(cfg, '/');
	size_t n;

	base = base ? base + 1 : cfg;
	n = strlen(base);
	if (n > 5 && strcmp(base + n - 5, ".json") == 0)
		n -= 5;
	return bare_id(base, n, id, idlen);
}

int
archive_manifest_id(const char *json, const char *tag, char *id,
    size_t idlen, char *other, size_t otherlen)
{
	json_t *root = json_loads(json, 0, NULL), *m, *t;
	struct sbuf b;
	size_t i, j;
	int rc = 1;

	if (!json_is_array(root)) {
		json_decref(root);
		return -1;
	}
	sbuf_init(&b);
	json_array_foreach(root, i, m) {
		const char *cfg = json_string_value(json_object_get(m,
		    "Config"));

		json_array_foreach(json_object_get(m, "RepoTags"), j, t) {
			const char *s = json_string_value(t);

			if (s == NULL)
				continue;
			if (strcmp(short_ref(s), short_ref(tag)) == 0 && cfg &&
			    config_id(cfg, id, idlen) == 0) {
				rc = 0;
				goto out;
			}
			sbuf_addf(&b, "%s%s", b.len ? " " : "", s);
		}
	}
out:
	utf8_copy(other, otherlen, b.len ? b.s : "no tags");
	sbuf_free(&b);
	json_decref(root);
	return rc;
}

int
image_reference(const char *const *ids, size_t n, size_t head)
{
	size_t i, j, count;
	int first = -1;

	for (i = 0; i < n; i++) {
		if (ids[i][0] == '\0')
			continue;
		if (first == -1)
			first = (int)i;
		for (count = 0, j = 0; j < n; j++)
			count += strcmp(ids[i], ids[j]) == 0;
		if (count * 2 > n)
			return (int)i;
	}
	if (head < n && ids[head][0])
		return (int)head;
	return first;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct model_file *)a)->name,
	    ((const struct model_file *)b)->name);
}

static int
key_name(const void *key, const void *f)
{
	return strcmp(key, ((const struct model_file *)f)->name);
}

static struct model_file *
find(const struct model_print *p, const char *name)
{
	return p->n ? bsearch(name, p->f, p->n, sizeof(*p->f), key_name) :
	    NULL;
}

void
model_print_parse(const char *out, struct model_print *p)
{
	const char *line, *end;
	size_t cap = 0;

	p->f = NULL;
	p->n = 0;
	for (line = out; *line; line = *end ? end + 1 : end) {
		char name[1024];
		long long size;
		int off = 0;

		end = line + strcspn(line, "\n");
		utf8_copyn(name, sizeof(name), line, (size_t)(end - line));
		if (sscanf(name, "f %lld %n", &size, &off) == 1 && off > 0 &&
		    name[off]) {
			if (p->n == cap) {
				cap = cap ? cap * 2 : 64;
				p->f = xrealloc(p->f, cap * sizeof(*p->f));
			}
			memset(&p->f[p->n], 0, sizeof(*p->f));
			p->f[p->n].name = xstrdup(name + off);
			p->f[p->n++].size = size;
		}
	}
	if (p->n)
		qsort(p->f, p->n, sizeof(*p->f), by_name);
	/* the checksums, once the list is sorted to find their files in */
	for (line = out; *line; line = *end ? end + 1 : end) {
		char buf[1024];
		long long size;
		unsigned long crc;
		struct model_file *f;
		int off = 0;

		end = line + strcspn(line, "\n");
		utf8_copyn(buf, sizeof(buf), line, (size_t)(end - line));
		if (sscanf(buf, "c %lu %lld ./%n", &crc, &size, &off) == 2 &&
		    off > 0 && (f = find(p, buf + off)) != NULL) {
			f->crc = crc;
			f->has_crc = 1;
		}
	}
}

void
model_print_free(struct model_print *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free(p->f[i].name);
	free(p->f);
	p->f = NULL;
	p->n = 0;
}

int
model_print_has(const struct model_print *p, const char *name)
{
	return find(p, name) != NULL;
}

static void
note(struct sbuf *b, size_t *count, const char *name)
{
	if (*count < 5)
		sbuf_addf(b, "%s%s", *count ? ", " : "", name);
	else if (*count == 5)
		sbuf_add(b, ", ...");
	(*count)++;
}

size_t
model_print_diff(const struct model_print *a, const struct model_print *b,
    char *names, size_t len)
{
	struct sbuf s;
	size_t i, count = 0;
	const struct model_file *o;

	sbuf_init(&s);
	for (i = 0; i < a->n; i++) {
		o = find(b, a->f[i].name);
		if (o == NULL || o->size != a->f[i].size || o->has_crc !=
		    a->f[i].has_crc || o->crc != a->f[i].crc)
			note(&s, &count, a->f[i].name);
	}
	for (i = 0; i < b->n; i++)
		if (find(a, b->f[i].name) == NULL)
			note(&s, &count, b->f[i].name);
	utf8_copy(names, len, count ? s.s : "");
	sbuf_free(&s);
	return count;
}
