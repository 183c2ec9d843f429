/*
 * The HTTP API (PRODUCT.md section 4) on libmicrohttpd: the server
 * (httpd.c) and the documents it answers with (render.c), built from the
 * cluster's read-only view (cluster.h).
 */
#ifndef TANDEM_API_H
#define TANDEM_API_H

#include <stddef.h>

struct cluster;
struct config;

/* httpd.c */
int	 httpd_start(struct cluster *, char *err, size_t errlen);
void	 httpd_stop(void);
const char *httpd_listen_warning(const struct config *, char *buf,
	    size_t len);

/* render.c: the /status document and the /metrics text */
char	*render_status(struct cluster *);
char	*render_metrics(struct cluster *);

#endif
