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

/*
 * An image's identity across the engine's image stores.
 *
 * On the classic store `image inspect {{.Id}}` is the config digest; on
 * the containerd image store (the default of a fresh docker 29) it is the
 * digest of the image's target, its manifest or index (moby
 * daemon/containerd/image_inspect.go). A docker save archive names the
 * config digest in manifest.json on both. So IDs compare only within one
 * store. What both stores show alike is read from the image config: its
 * creation date (.Created, RFC 3339 with trailing zeros dropped) and the
 * diff IDs of its layers (.RootFS.Layers). Two builds of a tag differ in
 * the date even where the layers are the same (a new ENV makes no
 * layer); the same build has the same of both on every store.
 */
struct image_ident {
	char		id[IMAGE_ID_LEN];	/* as the store says, bare hex */
	char		created[48];		/* normalised */
	unsigned long long layers_hash;		/* FNV-1a of the diff IDs */
	size_t		nlayers;
};

/*
 * cmd_image_identity's "ID|CREATED|DIFFID,DIFFID,": returns 0 and fills
 * ident, or -1 when the line is not that.
 */
int	image_ident_parse(const char *out, struct image_ident *);
/*
 * An image config blob (the archive's "created" and "rootfs.diff_ids"):
 * returns 0 and fills ident (id: the config digest given, if any), or -1.
 */
int	image_config_ident(const char *json, const char *config_digest,
	    struct image_ident *);
/*
 * Whether two identities are one build: the same diff IDs, and the same
 * date where both have one.
 */
int	image_ident_same(const struct image_ident *, const struct image_ident *);
/*
 * image_reference over identities: the build more than half of the nodes
 * hold (by image_ident_same), else the head's, else the first found. An
 * identity with no layers and no date is a node without the image.
 */
int	image_ident_reference(const struct image_ident *, size_t n, size_t head);
/*
 * Issue 41 item 7: an archive without manifest.json (an OCI layout:
 * podman save --format oci-archive, skopeo, docker 25+'s own save) is
 * loaded by the engine, which says what it loaded: docker "Loaded image:
 * REF" or, for an image without a name, "Loaded image ID: sha256:HEX";
 * podman "Loaded image: REF" or "Loaded image(s): REF,REF". Returns 0 when
 * tag was among them, 1 when only others were (listed in other, untagged
 * ones by ID), -1 when the output names no loaded image.
 */
int	image_load_parse(const char *out, const char *tag, char *other,
	    size_t otherlen);
/*
 * Whether the tar's complaint says the archive has no manifest.json (GNU
 * tar "tar: manifest.json: Not found in archive", busybox "tar:
 * manifest.json: not found in archive"): an OCI layout, not a broken file.
 */
int	archive_no_manifest(const char *err);
/*
 * manifest.json's Config path of the image tagged tag ("blobs/sha256/HEX"
 * or "HEX.json"): 0, 1 when only other tags are there (listed in other),
 * -1 when it is not a manifest.
 */
int	archive_manifest_config(const char *json, const char *tag, char *path,
	    size_t pathlen, char *other, size_t otherlen);

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
