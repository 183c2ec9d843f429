/*
 * Ray's ports and token authentication (Ray 2.52 and later): what
 * cmd_ray_exposure (lib/plan/plan_ray.c) found, and whether /status warns
 * ray-unauthenticated. Anyone who reaches the head's GCS (ray.port, 6379)
 * or its dashboard's job API (8265) can run code on every node unless
 * Ray's token authentication is on (CVE-2023-48022 is the job API's).
 */
#ifndef TANDEM_RAYSEC_H
#define TANDEM_RAYSEC_H

#include <stddef.h>

#define RAY_WARNING_CODE	"ray-unauthenticated"

enum ray_auth {
	RAY_AUTH_UNKNOWN,	/* the dashboard did not say */
	RAY_AUTH_TOKEN,		/* token authentication is on */
	RAY_AUTH_DISABLED,	/* Ray 2.52+, authentication off */
	RAY_AUTH_ABSENT,	/* Ray before 2.52: no authentication at all */
};

struct ray_probe {
	int		 gcs_open;	/* -1: not said */
	int		 dash_open;
	int		 mode_status;	/* HTTP status of authentication_mode */
	int		 version_status;	/* and of /api/version; 0 none */
	enum ray_auth	 auth;
	char		 words[200];	/* what the dashboard said, for messages */
};

/* Reads the command's answer; never fails (what it lacks stays unknown). */
void	ray_probe_parse(const char *text, size_t len, struct ray_probe *);

enum ray_exposure {
	RAYX_CLOSED,	/* neither port answers from the worker */
	RAYX_AUTH,	/* reachable, token authentication on */
	RAYX_OPEN,	/* reachable without a token: warn */
};

/*
 * WORKER is the probe from a worker against the head's fast-link address;
 * HEAD (may be NULL) the one on the head against 127.0.0.1, which reaches
 * a dashboard bound to localhost. CONFIG_TOKEN: ray.auth_token_file is
 * set. When neither dashboard answer says, the config decides. The
 * warning's message is written into msg.
 */
enum ray_exposure ray_exposure_judge(const struct ray_probe *worker,
	    const struct ray_probe *head, const char *head_ip, int gcs_port,
	    int config_token, char *msg, size_t len);

#endif
