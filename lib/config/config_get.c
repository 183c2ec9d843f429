/*
 * Reading one value of tandem.json by its type, and saying what is wrong
 * with it at its position: "FILE:LINE:COL: key.path: what".
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"
#include "jsonpos.h"

/* Where PATH starts in the file; a missing key points at its parent. */
static void
position(struct cfctx *c, const char *path, int *line, int *col)
{
	char at[256];

	snprintf(at, sizeof(at), "%s", path);
	while (jsonpos_find(c->jp, at, line, col) == -1 && at[0]) {
		char *dot = strrchr(at, '.'), *br = strrchr(at, '[');
		char *cut = dot > br ? dot : br;

		if (cut == NULL)
			at[0] = '\0';
		else
			*cut = '\0';
	}
	if (at[0] == '\0')
		(void)jsonpos_find(c->jp, "", line, col);
}

/*
 * Records the first error only: later ones are usually consequences of it,
 * and an operator fixes one line at a time anyway.
 */
int
cf_fail(struct cfctx *c, const char *path, const char *fmt, ...)
{
	char msg[ERRLEN];
	int line = 1, col = 1;
	va_list ap;

	if (c->failed)
		return -1;
	c->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	position(c, path, &line, &col);
	seterr(c->err, c->errlen, "%s:%d:%d: %s: %s", c->file, line, col,
	    path[0] ? path : "(top level)", msg);
	return -1;
}

/* A warning has the same "FILE:LINE:COL: path: what" shape as an error. */
void
cf_warn(struct cfctx *c, const char *path, const char *fmt, ...)
{
	char msg[ERRLEN];
	int line = 1, col = 1;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	position(c, path, &line, &col);
	strv_addf(&c->cf->warnings, "%s:%d:%d: %s: %s", c->file, line, col,
	    path, msg);
}

char *
cf_join(const char *path, const char *key)
{
	return path[0] ? xprintf("%s.%s", path, key) : xstrdup(key);
}

const char *
cf_typename(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:	return "an object";
	case JSON_ARRAY:	return "a list";
	case JSON_STRING:	return "a string";
	case JSON_INTEGER:	return "an integer";
	case JSON_REAL:		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:	return "a boolean";
	case JSON_NULL:		return "null";
	}
	return "a value";
}

int
cf_check_keys(struct cfctx *c, json_t *obj, const char *path,
    const char *const *allowed)
{
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach(obj, key, v) {
		for (i = 0; allowed[i]; i++)
			if (strcmp(allowed[i], key) == 0)
				break;
		if (allowed[i] == NULL) {
			char *p = cf_join(path, key);
			int rc = cf_fail(c, p, "unknown key");

			free(p);
			return rc;
		}
	}
	return 0;
}

/* Returns the member, NULL when absent; fails when not an object. */
json_t *
cf_get_obj(struct cfctx *c, json_t *obj, const char *path, const char *key)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	char *p;

	if (v == NULL || json_is_object(v))
		return v;
	p = cf_join(path, key);
	cf_fail(c, p, "must be an object, not %s", cf_typename(v));
	free(p);
	return NULL;
}

/* A string with no NUL inside: what C can hold of it is all of it. */
static int
whole_string(struct cfctx *c, const char *p, const json_t *v)
{
	if (!json_is_string(v))
		return cf_fail(c, p, "must be a string, not %s",
		    cf_typename(v));
	if (json_string_length(v) != strlen(json_string_value(v)))
		return cf_fail(c, p, "must not contain a NUL character");
	return 0;
}

int
cf_get_str(struct cfctx *c, json_t *obj, const char *path, const char *key,
    const char *def, const char *required, char **out)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	char *p = cf_join(path, key);
	int rc = 0;

	if (v == NULL) {
		if (required)
			rc = cf_fail(c, p, "%s", required);
		else
			*out = def ? xstrdup(def) : NULL;
	} else if ((rc = whole_string(c, p, v)) == 0) {
		if (json_string_length(v) == 0)
			rc = cf_fail(c, p, "must not be empty");
		else
			*out = xstrdup(json_string_value(v));
	}
	free(p);
	return rc;
}

/*
 * An integer (stored as an int) or any number (a double): def when absent,
 * refused outside min..max, shown as the kind it is.
 */
int
cf_get_number(struct cfctx *c, json_t *obj, const char *path,
    const char *key, int integer, double min, double max, double def,
    void *out)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	char *p = cf_join(path, key);
	long long n = v ? json_integer_value(v) : 0;
	double d = v ? json_number_value(v) : def;
	int rc = 0;

	if (v && !(integer ? json_is_integer(v) : json_is_number(v)))
		rc = cf_fail(c, p, "must be %s, not %s", integer ?
		    "an integer" : "a number", cf_typename(v));
	else if (v && integer && (n < (long long)min || n > (long long)max))
		rc = cf_fail(c, p, "%lld is out of range (%lld..%lld)", n,
		    (long long)min, (long long)max);
	else if (v && !integer && (d < min || d > max))
		rc = cf_fail(c, p, "%g is out of range (%g..%g)", d, min, max);
	else if (integer)
		*(int *)out = v ? (int)n : (int)def;
	else
		*(double *)out = d;
	free(p);
	return rc;
}

int
cf_get_strlist(struct cfctx *c, json_t *obj, const char *path,
    const char *key, struct strv *out)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	char *p = cf_join(path, key);
	size_t i;
	int rc = 0;

	strv_init(out);
	if (v && !json_is_array(v))
		rc = cf_fail(c, p, "must be a list of strings, not %s",
		    cf_typename(v));
	/* json_array_size is 0 for an absent or refused list */
	for (i = 0; rc == 0 && i < json_array_size(v); i++) {
		char *ep = xprintf("%s[%zu]", p, i);
		const json_t *e = json_array_get(v, i);

		rc = whole_string(c, ep, e);
		if (rc == 0 && json_string_length(e) == 0)
			rc = cf_fail(c, ep, "empty argument");
		if (rc == 0)
			strv_add(out, json_string_value(e));
		free(ep);
	}
	free(p);
	return rc;
}

static int
valid_env_key(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
}

/* Checks {placeholders}: only {ip} {ifname} {name} {rank} exist. */
static const char *
bad_template(const char *s)
{
	static const char *const known[] = { "ip", "ifname", "name", "rank",
	    NULL };
	const char *open, *close;
	size_t i;

	for (open = strchr(s, '{'); open; open = strchr(close, '{')) {
		close = strchr(open, '}');
		if (close == NULL)
			return "unterminated '{' (placeholders are {ip} "
			    "{ifname} {name} {rank})";
		for (i = 0; known[i]; i++)
			if (strlen(known[i]) == (size_t)(close - open - 1) &&
			    strncmp(open + 1, known[i], close - open - 1) == 0)
				break;
		if (known[i] == NULL)
			return "unknown placeholder (placeholders are {ip} "
			    "{ifname} {name} {rank})";
	}
	return NULL;
}

int
cf_get_env(struct cfctx *c, json_t *obj, const char *path, const char *key,
    struct kvlist *out)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL, *e;
	const char *k, *why;
	char *p = cf_join(path, key), *ep;
	int rc = 0;

	out->v = NULL;
	out->n = 0;
	if (v == NULL)
		goto done;
	if (!json_is_object(v)) {
		rc = cf_fail(c, p, "must be an object of strings, not %s",
		    cf_typename(v));
		goto done;
	}
	out->v = xcalloc(json_object_size(v), sizeof(struct kv));
	json_object_foreach(v, k, e) {
		ep = cf_join(p, k);
		if (!valid_env_key(k))
			rc = cf_fail(c, ep, "not a valid environment variable "
			    "name (letters, digits, _; not starting with a "
			    "digit)");
		else if ((rc = whole_string(c, ep, e)) == 0 &&
		    (why = bad_template(json_string_value(e))) != NULL)
			rc = cf_fail(c, ep, "%s", why);
		if (rc == 0) {
			out->v[out->n].key = xstrdup(k);
			out->v[out->n].val = xstrdup(json_string_value(e));
			out->n++;
		}
		free(ep);
		if (rc)
			break;
	}
done:
	free(p);
	return rc;
}

/* The remedy ladder: numbers in (0, 1], each lower than the one before. */
int
cf_get_steps(struct cfctx *c, json_t *obj, const char *path, const char *key,
    double **out, size_t *n)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL, *e;
	char *p = cf_join(path, key);
	size_t i;
	int rc = 0;

	if (v && !json_is_array(v))
		rc = cf_fail(c, p, "must be a list of numbers, not %s",
		    cf_typename(v));
	else if (v) {
		*out = xcalloc(json_array_size(v), sizeof(double));
		json_array_foreach(v, i, e) {
			char *ep = xprintf("%s[%zu]", p, i);
			double d = json_number_value(e);

			if (!json_is_number(e) || d <= 0 || d > 1 ||
			    (i > 0 && d >= (*out)[i - 1]))
				rc = cf_fail(c, ep, "steps must be numbers in "
				    "(0, 1], each lower than the one before");
			free(ep);
			if (rc)
				break;
			(*out)[(*n)++] = d;
		}
	}
	free(p);
	return rc;
}

char *
config_expand(const char *tmpl, const struct node_conf *n)
{
	struct sbuf b;
	const char *p;

	sbuf_init(&b);
	for (p = tmpl; *p; p++) {
		if (strncmp(p, "{ip}", 4) == 0) {
			sbuf_add(&b, n->ip);
			p += 3;
		} else if (strncmp(p, "{ifname}", 8) == 0) {
			sbuf_add(&b, n->ifname);
			p += 7;
		} else if (strncmp(p, "{name}", 6) == 0) {
			sbuf_add(&b, n->name);
			p += 5;
		} else if (strncmp(p, "{rank}", 6) == 0) {
			sbuf_addf(&b, "%d", n->rank);
			p += 5;
		} else
			sbuf_addc(&b, *p);
	}
	return sbuf_take(&b);
}

/* The last entry named key (docker keeps the last -e), or NULL. */
const char *
cf_kv_find(const struct kvlist *l, const char *key)
{
	size_t i;

	for (i = l->n; i > 0; i--)
		if (strcmp(l->v[i - 1].key, key) == 0)
			return l->v[i - 1].val;
	return NULL;
}
