/*
 * The one reader of the API token file, for tandemd and tandemctl alike;
 * lib/api/token.c holds the rules it applies.
 */
#ifndef TANDEM_TOKENFILE_H
#define TANDEM_TOKENFILE_H

#include <stddef.h>

/*
 * Reads the token from path. With judge set (tandemd), the file's owner
 * and mode must keep the token to root and this process's user
 * (token_perms_ok); tandemctl, which only sends the token, leaves that to
 * the daemon. 0 with *tok set; 0 with *tok NULL when path is NULL or the
 * file cannot be opened (err then says why; POST is disabled until it can);
 * -1 with a message when the file is refused: not a regular file, its
 * owner or mode, or what it holds (token_parse).
 */
int	 token_file_read(const char *path, int judge, char **tok, char *err,
	    size_t errlen);

#endif
