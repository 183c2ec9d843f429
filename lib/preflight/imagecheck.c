#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* A buffer a manifest's Config is written to. */
struct manifest_out {
	char	*buf;
	size_t	 len;
};

static int
take_id(const char *cfg, struct manifest_out *o)
{
	return config_id(cfg, o->buf, o->len);
}

static int
take_path(const char *cfg, struct manifest_out *o)
{
	utf8_copy(o->buf, o->len, cfg);
	return 0;
}

/*
 * The one place that reads an archive's manifest.json: the first entry
 * whose RepoTags hold tag (short_ref: docker.io/library/ left out) and
 * whose Config take accepts (0). Returns 0 then, 1 with the tags it holds
 * in other when none does, -1 when the text is not a manifest.
 */
static int
manifest_find(const char *json, const char *tag,
    int (*take)(const char *, struct manifest_out *), struct manifest_out *o,
    char *other, size_t otherlen)
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
			    take(cfg, o) == 0) {
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
archive_manifest_id(const char *json, const char *tag, char *id,
    size_t idlen, char *other, size_t otherlen)
{
	struct manifest_out o = { id, idlen };

	return manifest_find(json, tag, take_id, &o, other, otherlen);
}

/*
 * An image's creation date, as one string whoever printed it: docker's
 * inspect and an image config say RFC 3339 ("2026-01-07T10:00:00.5Z", Go's
 * RFC3339Nano drops the fraction's trailing zeros, a builder may keep
 * them, and the zone may be an offset); podman's inspect prints Go's
 * time.Time String() ("2026-01-07 10:00:00.5 +0000 UTC"). Both become UTC
 * RFC 3339 without trailing zeros; a date in neither shape is kept as it
 * is (and compares only with itself).
 */
static void
norm_created(const char *s, size_t n, char *out, size_t outlen)
{
	char buf[64], frac[16] = "";
	const char *p;
	int y, mo, d, h, mi, sec, k = 0, oh = 0, om = 0, sign;
	size_t f = 0;
	struct tm tm;
	time_t t;

	utf8_copyn(buf, sizeof(buf), s, n);
	if (sscanf(buf, "%4d-%2d-%2d%*1[T ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi,
	    &sec, &k) != 6 || k == 0) {
		utf8_copy(out, outlen, buf);
		return;
	}
	p = buf + k;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (f + 1 < sizeof(frac))
				frac[f++] = *p;
	while (f > 0 && frac[f - 1] == '0')
		f--;
	frac[f] = '\0';
	while (*p == ' ')
		p++;
	if (*p == 'Z')
		oh = 0;
	else if ((*p == '+' || *p == '-') && (sscanf(p + 1, "%2d:%2d", &oh,
	    &om) == 2 || sscanf(p + 1, "%2d%2d", &oh, &om) == 2))
		;	/* "+02:00" (RFC 3339), "+0200 CEST" (Go) */
	else {
		utf8_copy(out, outlen, buf);
		return;
	}
	sign = *p == '-' ? -1 : 1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm) - sign * (oh * 3600 + om * 60);
	if (gmtime_r(&t, &tm) == NULL) {
		utf8_copy(out, outlen, buf);
		return;
	}
	snprintf(out, outlen, "%04d-%02d-%02dT%02d:%02d:%02d%s%sZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, f ? "." : "", frac);
}

static unsigned long long
fnv(unsigned long long h, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

#define FNV_START	14695981039346656037ULL

static void
add_layer(struct image_ident *im, const char *s, size_t n)
{
	/* "sha256:HEX" on docker and podman alike; keep what is there */
	im->layers_hash = fnv(im->layers_hash, s, n);
	im->layers_hash = fnv(im->layers_hash, ",", 1);
	im->nlayers++;
}

int
image_ident_parse(const char *out, struct image_ident *im)
{
	const char *bar1, *bar2, *p, *end;

	memset(im, 0, sizeof(*im));
	im->layers_hash = FNV_START;
	end = out + strcspn(out, "\r\n");
	if ((bar1 = memchr(out, '|', (size_t)(end - out))) == NULL ||
	    (bar2 = memchr(bar1 + 1, '|', (size_t)(end - bar1 - 1))) == NULL)
		return -1;
	if (bare_id(out, (size_t)(bar1 - out), im->id, sizeof(im->id)) == -1)
		return -1;
	norm_created(bar1 + 1, (size_t)(bar2 - bar1 - 1), im->created,
	    sizeof(im->created));
	for (p = bar2 + 1; p < end; ) {
		size_t n = strcspn(p, ",\r\n");

		if (p + n > end)
			n = (size_t)(end - p);
		if (n)
			add_layer(im, p, n);
		p += n + 1;
	}
	return 0;
}

int
image_config_ident(const char *json, const char *config_digest,
    struct image_ident *im)
{
	json_t *root = json_loads(json, 0, NULL), *ids, *v;
	const char *created;
	size_t i;

	memset(im, 0, sizeof(*im));
	im->layers_hash = FNV_START;
	ids = json_object_get(json_object_get(root, "rootfs"), "diff_ids");
	if (!json_is_object(root) || !json_is_array(ids)) {
		json_decref(root);
		return -1;
	}
	json_array_foreach(ids, i, v) {
		const char *s = json_string_value(v);

		if (s == NULL) {
			json_decref(root);
			return -1;
		}
		add_layer(im, s, strlen(s));
	}
	if ((created = json_string_value(json_object_get(root, "created"))))
		norm_created(created, strlen(created), im->created,
		    sizeof(im->created));
	if (config_digest)
		(void)config_id(config_digest, im->id, sizeof(im->id));
	json_decref(root);
	return 0;
}

static int
ident_empty(const struct image_ident *im)
{
	return im->nlayers == 0 && im->created[0] == '\0';
}

int
image_ident_same(const struct image_ident *a, const struct image_ident *b)
{
	if (ident_empty(a) || ident_empty(b))
		return 0;
	if (a->nlayers != b->nlayers || a->layers_hash != b->layers_hash)
		return 0;
	return a->created[0] == '\0' || b->created[0] == '\0' ||
	    strcmp(a->created, b->created) == 0;
}

int
image_ident_reference(const struct image_ident *im, size_t n, size_t head)
{
	size_t i, j, count;
	int first = -1;

	for (i = 0; i < n; i++) {
		if (ident_empty(&im[i]))
			continue;
		if (first == -1)
			first = (int)i;
		for (count = 0, j = 0; j < n; j++)
			count += image_ident_same(&im[i], &im[j]);
		if (count * 2 > n)
			return (int)i;
	}
	if (head < n && !ident_empty(&im[head]))
		return (int)head;
	return first;
}

int
archive_manifest_config(const char *json, const char *tag, char *path,
    size_t pathlen, char *other, size_t otherlen)
{
	struct manifest_out o = { path, pathlen };

	return manifest_find(json, tag, take_path, &o, other, otherlen);
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

/* One REF of a load line: compared as the engines name it, short. */
static int
load_ref_is(const char *ref, size_t n, const char *tag)
{
	char buf[256];

	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, ref, n);
	buf[n] = '\0';
	return strcmp(short_ref(buf), short_ref(tag)) == 0;
}

int
image_load_parse(const char *out, const char *tag, char *other,
    size_t otherlen)
{
	static const char *const heads[] = { "Loaded image(s): ",
	    "Loaded image ID: ", "Loaded image: " };
	const char *l, *e;
	struct sbuf b;
	int found = 0, any = 0;

	sbuf_init(&b);
	for (l = out ? out : ""; *l; l = *e ? e + 1 : e) {
		const char *p;
		size_t k, hl = 0;

		e = l + strcspn(l, "\n");
		for (k = 0; k < sizeof(heads) / sizeof(heads[0]); k++)
			if (strncmp(l, heads[k], strlen(heads[k])) == 0) {
				hl = strlen(heads[k]);
				break;
			}
		if (hl == 0)
			continue;
		/* podman lists several, comma-separated */
		for (p = l + hl; p < e; ) {
			size_t n = strcspn(p, ",\r\n");

			if (p + n > e)
				n = (size_t)(e - p);
			while (n && p[n - 1] == ' ')
				n--;
			if (n) {
				any = 1;
				if (k != 1 && load_ref_is(p, n, tag))
					found = 1;
				else
					sbuf_addf(&b, "%s%s%.*s", b.len ? " " : "",
					    k == 1 ? "an untagged image " : "",
					    (int)n, p);
			}
			p += n;
			while (p < e && (*p == ',' || *p == ' ' || *p == '\r'))
				p++;
		}
	}
	utf8_copy(other, otherlen, b.len ? b.s : "nothing");
	sbuf_free(&b);
	return found ? 0 : any ? 1 : -1;
}

int
archive_no_manifest(const char *err)
{
	return err != NULL && (strstr(err, "manifest.json: Not found in "
	    "archive") != NULL || strstr(err, "manifest.json: not found in "
	    "archive") != NULL);
}

