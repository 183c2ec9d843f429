/*
 * Where each value of a JSON text starts, by key path ("nodes[1].ip").
 * jansson reports positions only for syntax errors; a config error about a
 * value ("not an IPv4 address") must point at it too, so after jansson has
 * accepted the text we index it once here. Only valid JSON is indexed.
 */
#ifndef TANDEM_JSONPOS_H
#define TANDEM_JSONPOS_H

struct jsonpos;

struct jsonpos	*jsonpos_index(const char *text);
/* Returns 0 and sets line/column (1-based), or -1 when the path is unknown. */
int		 jsonpos_find(const struct jsonpos *, const char *path,
		    int *line, int *col);
void		 jsonpos_free(struct jsonpos *);

#endif
