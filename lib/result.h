/*
 * What a command run on a node gave back, whatever ran it (the daemon's
 * SSH sessions, tandemctl's, a test): the input of every verdict in lib/
 * on remote output.
 */
#ifndef TANDEM_RESULT_H
#define TANDEM_RESULT_H

#include <stddef.h>

struct cmd_result {
	int		 exit_code;	/* -1: no exit status (see error) */
	const char	*out;		/* NUL-terminated, outlen bytes before */
	size_t		 outlen;
	const char	*err;
	size_t		 errlen;
	const char	*error;		/* transport failure or timeout; NULL */
	double		 elapsed_s;
};

typedef void	cmd_done_fn(const struct cmd_result *, void *arg);

#endif
