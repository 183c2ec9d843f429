/*
 * What the image and model checks print, parsed: the image's ID and date,
 * the image an archive holds, which ID the nodes should agree on, and the
 * fingerprint of a model directory with the files two of them differ in.
 */
#ifndef TANDEM_IMAGECHECK_H
#define TANDEM_IMAGECHECK_H

#include <stddef.h>

#define IMAGE_ID_LEN	65	/* 64 hex digits, no "sha256:" */

/*
 * `image inspect --format '{{.Id}} {{.Created}}'`: returns 0 and copies
 * the ID (bare hex: docker's "sha256:" is dropped, podman has none) and
 * the date, or -1.
 */
int	image_inspect_parse(const char *out, char *id, size_t idlen,
	    char *created, size_t createdlen);
/*
 * An archive's manifest.json (docker save, podman save): returns 0 and
 * the ID of the image tagged tag, 1 when the archive holds only other
 * tags (their list in other), -1 when it is not a manifest.
 */
int	archive_manifest_id(const char *json, const char *tag, char *id,
	    size_t idlen, char *other, size_t otherlen);
/*
 * The ID the nodes should all have: the one more than half of them hold,
 * else the head's, else the first found. ids[i] is "" for a node without
 * the image. Returns the index of a node holding it, or -1 when none has.
 */
int	image_reference(const char *const *ids, size_t n, size_t head);

struct model_file {
	char		*name;
	long long	 size;
	unsigned long	 crc;
	int		 has_crc;
};

struct model_print {
	struct model_file	*f;
	size_t			 n;
};

/* Parses cmd_model_fingerprint's output; lines it cannot read are left. */
void	model_print_parse(const char *out, struct model_print *);
void	model_print_free(struct model_print *);
/* Whether the fingerprint lists name (a path inside the directory). */
int	model_print_has(const struct model_print *, const char *name);
/*
 * The files a and b differ in (size, checksum, or one lacks it): returns
 * how many, and lists the first of them, comma-separated, in names.
 */
size_t	model_print_diff(const struct model_print *a,
	    const struct model_print *b, char *names, size_t len);

#endif
