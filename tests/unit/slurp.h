/*
 * A whole file read into memory, for the golden-file and docs tests; a
 * missing file fails the test. Include after cmocka.h and util.h.
 */
#ifndef TANDEM_TEST_SLURP_H
#define TANDEM_TEST_SLURP_H

static char *
slurp(const char *path)
{
	struct sbuf b;
	char buf[4096];
	size_t n;
	FILE *fp = fopen(path, "r");

	assert_non_null(fp);
	sbuf_init(&b);
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		sbuf_addn(&b, buf, n);
	fclose(fp);
	return sbuf_take(&b);
}

#endif
